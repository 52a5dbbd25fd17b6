"""One step of recursive rejection sampling, shared by rrs, rrs_wor and their biased variants.

Against the current target ``r`` and the proposal ``s`` the candidate x came from: accept x with
probability ``a = min(1, r(x)/s(x) + slack)`` (``slack = 0`` for the exact rule); on rejection the
next target is ``norm((r - s)+)``. That residual has mass ``TV(r, s) > 0`` whenever a rejection is
possible in exact arithmetic; if rounding leaves it empty (``r == s`` up to rounding, or masses that
underflow), the next target stays ``r`` (``resispec.residual``: the law then errs by at most the lost
mass, and a token outside ``r``'s support is never accepted for lack of a residual).
"""

from __future__ import annotations

import numpy as np


def rejection_step(target: np.ndarray, proposal: np.ndarray, candidate: int,
                   slack: float = 0.0) -> tuple[float, np.ndarray]:
    """``(a, next_target)`` for one step; ``next_target`` is ``target`` itself when ``a == 1`` (never
    rejected) or when rounding left the residual without mass."""
    if target[candidate] >= proposal[candidate]:
        return 1.0, target
    acceptance = min(1.0, target[candidate] / proposal[candidate] + slack)
    if acceptance >= 1.0:
        return 1.0, target
    residual = np.maximum(target - proposal, 0.0)
    mass = residual.sum()
    if not mass > 0:
        return acceptance, target
    return acceptance, residual / mass
