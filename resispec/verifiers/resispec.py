"""resispec: exact residual shaping for i.i.d. candidates (the project's realisation of ResiSpec).

With the schedule ``T_1 >= ... >= T_k >= T_{k+1} = 0``, ``R_j = 1 - g(T_1) + g(T_j)`` (see
``resispec.shaping``), step j accepts candidate x with probability
``a_j(x) = [min(p(x), T_j q(x)) - min(p(x), T_{j+1} q(x))] / (R_j q(x))``; all rejected (probability
``z = 1 - g(T_1)``): emit from ``norm((p - T_1 q)+)``. The residual after j rejections is
proportional to ``(p - T_1 q)+ + min(p, T_{j+1} q)``: draft-shaped mass kept for later candidates.
Exact for any thresholds with ``T_j - T_{j+1} <= R_j``; the schedule makes them tight, and its
acceptance equals the optimum of the sequential LP for every V and k (an LP-duality proof with an
explicit dual built from the schedule: theory/resispec.py, docs/theory.md). Acceptance (closed
form) ``g(T_1) = 1 - z``, at least rrs's and spectr's, at most the i.i.d. optimum.
"""

from __future__ import annotations

import numpy as np

from resispec.ratio_profile import RatioProfile
from resispec.shaping import Schedule, schedule_from_profile
from resispec.verifiers.base import BoundVerifier, SequentialVerifier, StepGenerator


class ResiSpec(SequentialVerifier):
    """Residual shaping with the optimal threshold schedule. Exact."""

    name = "resispec"
    drafting = "iid"
    claims_exact = True
    single_candidate_is_sps = True

    def _prepare(self, p: np.ndarray, q: np.ndarray, k: int) -> Schedule:
        return schedule_from_profile(RatioProfile(p, q), k)

    def _steps(self, bound: BoundVerifier, candidates: np.ndarray) -> StepGenerator:
        plan: Schedule = bound.plan
        thresholds = np.append(plan.T, 0.0)
        for j, candidate in enumerate(candidates):
            # a_j = [min(rho, T_j) - min(rho, T_{j+1})] / R_j with rho = p(x)/q(x): the formula above
            # divided by q(x) first, so tiny masses cannot underflow to 0/0 (rho = inf is harmless).
            with np.errstate(over="ignore"):
                ratio = bound.p[candidate] / bound.q[candidate]
            accepted = min(ratio, thresholds[j]) - min(ratio, thresholds[j + 1])
            reach = plan.R[j]
            yield min(max(accepted / reach, 0.0), 1.0) if reach > 0 else 0.0
        residual = plan.T[0] * bound.q
        np.subtract(bound.p, residual, out=residual)
        return np.maximum(residual, 0.0, out=residual)

    def _acceptance(self, bound: BoundVerifier) -> float:
        """Closed form ``g(T_1) = 1 - z``."""
        return bound.plan.acceptance
