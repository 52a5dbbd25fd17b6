"""resispec: exact residual shaping for i.i.d. candidates (the project's realisation of ResiSpec).

With the schedule ``T_1 >= ... >= T_k >= T_{k+1} = 0``, ``R_j = 1 - g(T_1) + g(T_j)`` (its plan,
``resispec.verifiers.resispec.plan``), step j accepts candidate x with probability
``a_j(x) = [min(p(x), T_j q(x)) - min(p(x), T_{j+1} q(x))] / (R_j q(x))``; all rejected (probability
``z = 1 - g(T_1)``): emit from ``norm((p - T_1 q)+)``. The residual after j rejections is
proportional to ``(p - T_1 q)+ + min(p, T_{j+1} q)``: draft-shaped mass kept for later candidates.
Exact for any thresholds with ``T_j - T_{j+1} <= R_j``; the schedule makes them tight, and its
acceptance equals the optimum of the sequential LP for every V and k (an LP-duality proof with an
explicit dual built from the schedule: theory/resispec/resispec.py, docs/theory.md). Acceptance (closed
form) ``g(T_1) = 1 - z``, at least rrs's and spectr's, at most the i.i.d. optimum.
"""

from __future__ import annotations

from resispec.rows import Array, float_errors_allowed, gather_rows, namespace, positive_part_
from resispec.verifiers.base import BatchedSequentialVerifier, BoundVerifier, RowStepGenerator
from resispec.verifiers.resispec.plan import Schedule, resispec_plan


class ResiSpec(BatchedSequentialVerifier):
    """Residual shaping with the optimal threshold schedule. Exact."""

    name = "resispec"
    drafting = "iid"
    claims_exact = True
    single_candidate_is_sps = True
    closed_form = True
    colour = "tab:red"

    def _row_plan(self, p: Array, q: Array, k: int) -> Schedule:
        return resispec_plan(p, q, k)

    def _row_steps(self, p: Array, q: Array, candidates: Array, plan: Schedule) -> RowStepGenerator:
        xp = namespace(p, q)
        # a_j = [min(rho, T_j) - min(rho, T_{j+1})] / R_j with rho = p(x)/q(x), every step at once (the
        # candidates are i.i.d.: no step depends on the rejected ones): the formula above divided by q(x)
        # first, so tiny masses cannot underflow to 0/0 (rho = inf is harmless).
        with float_errors_allowed(p):
            ratio = gather_rows(p, candidates) / gather_rows(q, candidates)
        lower = xp.concat([plan.T[:, 1:], xp.zeros_like(plan.T[:, :1])], axis=1)
        accepted = xp.minimum(ratio, plan.T) - xp.minimum(ratio, lower)
        reached = plan.R > 0
        acceptance = xp.where(reached, xp.minimum(xp.maximum(accepted / xp.where(reached, plan.R, 1.0), 0.0), 1.0), 0.0)
        for j in range(candidates.shape[1]):
            yield acceptance[:, j]
        return positive_part_(p - plan.T[:, :1] * q)

    def _acceptance(self, bound: BoundVerifier) -> float:
        """Closed form ``g(T_1) = 1 - z``."""
        return float(bound.plan.acceptance[0])
