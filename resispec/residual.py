"""The final-residual fallback shared by every verifier: never emit a token the target forbids.

A verifier's final residual ``w`` (unnormalised, >= 0) is, in exact arithmetic, supported inside the
target's support ``{p > 0}`` and has positive mass whenever the final residual can be reached. In
floating point, rounding can break both: ``(r - s)+`` can underflow to all zeros (``r`` and ``s``
equal up to rounding, or masses below 1e-308), and a difference can leave dust on a token with
``p = 0``. ``supported_residual`` restores the invariant: it zeroes ``w`` off ``{p > 0}`` and, if no
mass is left, falls back to ``p`` itself. The emitted law then differs from ``p`` by at most the
mass rounding lost (the exact probability of that branch), and no token with ``p(x) = 0`` is
ever emitted.
"""

from __future__ import annotations

import numpy as np


def supported_residual(residual: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``w 1[p > 0]`` for the residual weights ``w`` (shape (V,)), or ``p`` when that has no mass."""
    supported = np.where(p > 0, residual, 0.0)
    return supported if supported.sum() > 0 else p


def supported_acceptance(acceptance: float, p_x: float) -> float:
    """A candidate's acceptance probability, 0 when the target forbids it (``p(x) = 0``).

    Exact verifiers give ``a(x) = 0`` there by construction; this guard keeps rounding (and NaN from
    ``0/0`` in an underflowed ratio) from ever accepting such a token.
    """
    return acceptance if p_x > 0 and acceptance == acceptance else 0.0
