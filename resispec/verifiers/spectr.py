"""spectr: SpecTr's k-SEQ (Sun et al. 2023), i.i.d. candidates.

``beta(rho) = sum_x min(q(x), p(x)/rho) = g(rho)/rho``; ``rho*`` is the smallest ``rho`` in
``[1, k]`` with ``1 - (1 - beta)^k <= rho beta`` (the predicate is monotone: its left side falls
and ``rho beta = g(rho)`` rises with rho). Every candidate is accepted with probability
``min(1, p(x)/(rho* q(x)))``; all rejected: emit from
``norm(p - min(q, p/rho*) (1 - (1 - beta)^k) / beta)``, non-negative when the predicate holds (and
only then, provided some token has ``0 < p <= rho q``; theory/spectr.py). Exact. For k >= 2 it is a
feasible point of the sequential LP but not a resispec threshold schedule, so resispec accepts at
least as much. Acceptance (closed form) ``1 - (1 - beta)^k``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from resispec.ratio_profile import RatioProfile
from resispec.roots import bracket_boundary
from resispec.verifiers.base import BoundVerifier, SequentialVerifier, StepGenerator


@dataclass(frozen=True)
class SpecTrPlan:
    """``rho*``, ``beta = beta(rho*)`` and the accepted-mass factor ``(1 - (1 - beta)^k) / beta``."""

    rho: float
    beta: float
    factor: float


def spectr_plan(p: np.ndarray, q: np.ndarray, k: int) -> SpecTrPlan:
    """Find ``rho*`` on the feasible side (``hi`` of the final bracket keeps the residual >= 0)."""
    profile = RatioProfile(p, q)

    def beta(rho: np.ndarray) -> np.ndarray:
        return profile.g(rho) / rho

    def infeasible(rho: np.ndarray) -> np.ndarray:
        b = beta(rho)
        return 1.0 - (1.0 - b) ** k > rho * b

    rho = 1.0
    if infeasible(np.array([1.0]))[0]:
        rho = bracket_boundary(infeasible, 1.0, float(k))[1]
    b = float(beta(np.array([rho]))[0])
    factor = (1.0 - (1.0 - b) ** k) / b if b > 0 else 0.0
    return SpecTrPlan(rho=rho, beta=b, factor=factor)


class SpecTr(SequentialVerifier):
    """SpecTr k-SEQ with a constant acceptance rate over i.i.d. candidates. Exact."""

    name = "spectr"
    drafting = "iid"
    claims_exact = True
    single_candidate_is_sps = True

    def _prepare(self, p: np.ndarray, q: np.ndarray, k: int) -> SpecTrPlan:
        return spectr_plan(p, q, k)

    def _steps(self, bound: BoundVerifier, candidates: np.ndarray) -> StepGenerator:
        plan: SpecTrPlan = bound.plan
        for candidate in candidates:
            scaled_q = plan.rho * bound.q[candidate]
            yield 1.0 if bound.p[candidate] >= scaled_q else bound.p[candidate] / scaled_q
        accepted = np.minimum(bound.q, bound.p / plan.rho) * plan.factor
        return np.maximum(bound.p - accepted, 0.0)

    def _acceptance(self, bound: BoundVerifier) -> float:
        """Closed form ``1 - (1 - beta)^k``."""
        return 1.0 - (1.0 - bound.plan.beta) ** bound.k
