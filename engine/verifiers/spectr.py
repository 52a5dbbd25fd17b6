"""Torch port of ``resispec.verifiers.spectr.SpecTr``: SpecTr's k-SEQ (Sun et al. 2023), batched.

``beta(rho) = sum_x min(q(x), p(x)/rho) = g(rho)/rho``; per node, ``rho*`` is the smallest ``rho`` in
``[1, k]`` with ``1 - (1 - beta)^k <= rho beta``, found by the batched grid bisection of
``engine.verifiers.roots`` on the feasible side (the upper end of the final bracket keeps the
residual non-negative). Every candidate is accepted with probability ``min(1, p(x)/(rho* q(x)))``;
all rejected: emit from ``norm(p - min(q, p/rho*) (1 - (1 - beta)^k) / beta)``. Exact.
Shapes: p, q (B, V); candidates (B, k).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.verifiers.base import SequentialTorchVerifier, TorchStepGenerator
from engine.verifiers.ratio_profile import TorchRatioProfile
from engine.verifiers.roots import bracket_boundary
from resispec.verifiers.spectr import SpecTr


@dataclass(frozen=True)
class TorchSpecTrPlan:
    """Per node (B,): ``rho*``, ``beta = beta(rho*)``, and ``(1 - (1 - beta)^k) / beta`` (0 if beta = 0)."""

    rho: torch.Tensor
    beta: torch.Tensor
    factor: torch.Tensor


def spectr_plan(p: torch.Tensor, q: torch.Tensor, k: int) -> TorchSpecTrPlan:
    """``rho*`` for every node: 1 where feasible at 1, else the upper end of the final bracket in [1, k]."""
    profile = TorchRatioProfile(p, q)

    def beta(rho: torch.Tensor) -> torch.Tensor:
        return profile.g(rho) / rho

    def infeasible(rho: torch.Tensor) -> torch.Tensor:
        b = beta(rho)
        return 1.0 - (1.0 - b) ** k > rho * b

    one = p.new_ones(p.shape[0], 1)
    upper = bracket_boundary(infeasible, one[:, 0], float(k) * one[:, 0])[1]
    rho = torch.where(infeasible(one)[:, 0], upper, 1.0)
    b = beta(rho[:, None])[:, 0]
    factor = torch.where(b > 0, (1.0 - (1.0 - b) ** k) / b, 0.0)
    return TorchSpecTrPlan(rho=rho, beta=b, factor=factor)


class TorchSpecTr(SequentialTorchVerifier):
    """SpecTr k-SEQ with a constant acceptance rate over i.i.d. candidates, all nodes at once. Exact."""

    numpy_twin = SpecTr

    def _prepare(self, p: torch.Tensor, q: torch.Tensor, k: int) -> TorchSpecTrPlan:
        return spectr_plan(p, q, k)

    def _steps(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor,
               plan: TorchSpecTrPlan) -> TorchStepGenerator:
        for i in range(candidates.shape[1]):
            index = candidates[:, i:i + 1]
            p_x = p.gather(1, index)[:, 0]
            scaled_q = plan.rho * q.gather(1, index)[:, 0]
            yield torch.where(p_x >= scaled_q, 1.0, p_x / scaled_q)
        accepted = torch.minimum(q, p / plan.rho[:, None]) * plan.factor[:, None]
        return (p - accepted).clamp_(min=0.0)
