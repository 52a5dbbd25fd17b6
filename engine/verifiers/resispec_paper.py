"""Torch port of ``resispec.verifiers.resispec_paper.ResiSpecPaper``: the published rule, batched. BIASED.

Known-biased negative control. Candidates i.i.d.; accept x with probability ``min(1, r(x)/q(x))``;
on rejecting ``x0``: budget ``Z = q(x0) - r(x0)``; reserve ``res(x0) = 0``,
``res(i) = min(Z q(i), r(i))``; pour the deficit ``Z - sum(res)`` onto tokens ``i != x0`` in
descending order of ``q(i)`` (ties by token id), each up to its capacity ``r(i) - res(i)``, with one
cumulative sum over each node's pour order; the new target is ``norm(res)``. Its output law need
not equal p (``p = (.4, .3, .3)``, ``q = (.6, .3, .1)``, k = 1 emits ``(.4, .48, .12)``).
Shapes: p, q (B, V); candidates (B, k).
"""

from __future__ import annotations

import torch

from engine.verifiers.base import SequentialTorchVerifier, TorchStepGenerator
from resispec.verifiers.resispec_paper import ResiSpecPaper


def paper_residual(target: torch.Tensor, q: torch.Tensor, rejected: torch.Tensor,
                   pour_order: torch.Tensor) -> torch.Tensor:
    """The published proxy residual (B, V), normalised, after each node rejects ``rejected`` (B,).

    ``pour_order`` (B, V): token ids by descending q, ties by id. Rows that could not reject (budget
    <= 0) come out meaningless; their nodes accept at this step for sure and never use them.
    """
    index = rejected[:, None]
    budget = q.gather(1, index) - target.gather(1, index)
    reserve = torch.minimum(budget * q, target).scatter_(1, index, 0.0)
    deficit = budget - reserve.sum(dim=-1, keepdim=True)
    capacity = (target - reserve).scatter_(1, index, 0.0).gather(1, pour_order)
    before = torch.cumsum(capacity, dim=-1) - capacity
    poured = torch.minimum((deficit - before).clamp_(min=0.0), capacity)
    reserve.scatter_add_(1, pour_order, poured)
    return reserve / reserve.sum(dim=-1, keepdim=True)


class TorchResiSpecPaper(SequentialTorchVerifier):
    """The published residual-shaping rule; a known-biased control (claims_exact = False)."""

    numpy_twin = ResiSpecPaper

    def _prepare(self, p: torch.Tensor, q: torch.Tensor, k: int) -> torch.Tensor:
        """Each node's pour order (B, V): descending q, ties by ascending token id."""
        return torch.sort(q, dim=-1, descending=True, stable=True).indices

    def _steps(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor,
               plan: torch.Tensor) -> TorchStepGenerator:
        target = p
        for i in range(candidates.shape[1]):
            index = candidates[:, i:i + 1]
            target_x, q_x = target.gather(1, index)[:, 0], q.gather(1, index)[:, 0]
            yield torch.where(target_x >= q_x, 1.0, target_x / q_x)
            target = paper_residual(target, q, candidates[:, i], plan)
        return target
