"""resispec_paper: the published ResiSpec Algorithm 1 as reconstructed from public reviews. BIASED.

Known-biased negative control. Candidates i.i.d.; accept x with probability ``min(1, r(x)/q(x))``;
on rejecting ``x0`` (so ``q(x0) > r(x0)``): budget ``Z = q(x0) - r(x0)``; reserve ``res(x0) = 0``,
``res(i) = min(Z q(i), r(i))`` for ``i != x0``; pour the deficit ``Z - sum(res)`` onto tokens
``i != x0`` in descending order of ``q(i)`` (ties by token id), each up to its capacity
``r(i) - res(i)``; the new target is ``norm(res)``. The output law is
``min(p, q) + sum_x (q - p)+(x) R_x`` with an x-dependent residual ``R_x``, which need not equal p:
``p = (.4, .3, .3)``, ``q = (.6, .3, .1)``, k = 1 emits ``(.4, .48, .12)``.
Acceptance: exact enumeration.
"""

from __future__ import annotations

import numpy as np

from resispec.verifiers.base import BoundVerifier, SequentialVerifier, StepGenerator


def paper_residual(target: np.ndarray, q: np.ndarray, rejected: int) -> np.ndarray:
    """The published proxy residual after rejecting ``rejected`` (shape (V,), normalised)."""
    budget = q[rejected] - target[rejected]
    reserve = np.minimum(budget * q, target)
    reserve[rejected] = 0.0
    deficit = budget - reserve.sum()
    capacity = target - reserve
    capacity[rejected] = 0.0
    pour_order = np.lexsort((np.arange(q.size), -q))
    poured = np.clip(deficit - (np.cumsum(capacity[pour_order]) - capacity[pour_order]), 0.0, capacity[pour_order])
    reserve[pour_order] += poured
    return reserve / reserve.sum()


class ResiSpecPaper(SequentialVerifier):
    """The published residual-shaping rule; a known-biased control (claims_exact = False)."""

    name = "resispec_paper"
    drafting = "iid"
    claims_exact = False

    def _steps(self, bound: BoundVerifier, candidates: np.ndarray) -> StepGenerator:
        target = bound.p
        for candidate in candidates:
            q_x = bound.q[candidate]
            yield 1.0 if target[candidate] >= q_x else target[candidate] / q_x
            target = paper_residual(target, bound.q, candidate)
        return target
