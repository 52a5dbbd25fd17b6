"""spectr: SpecTr's k-SEQ (Sun et al. 2023), i.i.d. candidates.

``beta(rho) = sum_x min(q(x), p(x)/rho) = g(rho)/rho``; ``rho*`` is the smallest ``rho`` in
``[1, k]`` with ``1 - (1 - beta)^k <= rho beta`` (the predicate is monotone: its left side falls
and ``rho beta = g(rho)`` rises with rho). Every candidate is accepted with probability
``min(1, p(x)/(rho* q(x)))``; all rejected: emit from
``norm(p - min(q, p/rho*) (1 - (1 - beta)^k) / beta)``, non-negative when the predicate holds (and
only then, provided some token has ``0 < p <= rho q``; theory/spectr/spectr.py). Exact. For k >= 2 it is a
feasible point of the sequential LP but not a resispec threshold schedule, so resispec accepts at
least as much. Acceptance (closed form) ``1 - (1 - beta)^k``.
"""

from __future__ import annotations

from dataclasses import dataclass

from resispec.roots import bracket_boundary
from resispec.row_ratio_profile import RowRatioProfile
from resispec.rows import Array, namespace, value_at
from resispec.verifiers.base import BatchedSequentialVerifier, BoundVerifier, RowStepGenerator


@dataclass(frozen=True)
class SpecTrPlan:
    """Per row (B,): ``rho*``, ``beta = beta(rho*)`` and the accepted-mass factor
    ``(1 - (1 - beta)^k) / beta`` (0 where beta = 0)."""

    rho: Array
    beta: Array
    factor: Array


def spectr_plan(p: Array, q: Array, k: int) -> SpecTrPlan:
    """``rho*`` of every row (B, V): 1 where feasible at 1, else the upper end of the final bracket in
    ``[1, k]`` (the feasible side keeps the residual >= 0)."""
    xp = namespace(p, q)
    profile = RowRatioProfile(p, q)

    def beta(rho: Array) -> Array:
        return profile.g(rho) / rho

    def infeasible(rho: Array) -> Array:
        b = beta(rho)
        return 1.0 - (1.0 - b) ** k > rho * b

    one = xp.ones((p.shape[0],), dtype=p.dtype)
    upper = bracket_boundary(infeasible, one, float(k) * one)[1]
    rho = xp.where(infeasible(one[:, None])[:, 0], upper, 1.0)
    b = beta(rho[:, None])[:, 0]
    positive = b > 0
    factor = xp.where(positive, (1.0 - (1.0 - b) ** k) / xp.where(positive, b, 1.0), 0.0)
    return SpecTrPlan(rho=rho, beta=b, factor=factor)


class SpecTr(BatchedSequentialVerifier):
    """SpecTr k-SEQ with a constant acceptance rate over i.i.d. candidates. Exact."""

    name = "spectr"
    drafting = "iid"
    claims_exact = True
    single_candidate_is_sps = True
    closed_form = True
    colour = "tab:green"

    def _row_plan(self, p: Array, q: Array, k: int) -> SpecTrPlan:
        return spectr_plan(p, q, k)

    def _row_steps(self, p: Array, q: Array, candidates: Array, plan: SpecTrPlan) -> RowStepGenerator:
        xp = namespace(p, q)
        for i in range(candidates.shape[1]):
            p_x, scaled_q = value_at(p, candidates[:, i]), plan.rho * value_at(q, candidates[:, i])
            below = p_x < scaled_q  # divide only there: no overflow in the rows that accept for sure
            yield xp.where(below, p_x / xp.where(below, scaled_q, 1.0), 1.0)
        accepted = xp.minimum(q, p / plan.rho[:, None]) * plan.factor[:, None]
        return xp.maximum(p - accepted, 0.0)

    def _acceptance(self, bound: BoundVerifier) -> float:
        """Closed form ``1 - (1 - beta)^k``."""
        return float(1.0 - (1.0 - bound.plan.beta[0]) ** bound.k)
