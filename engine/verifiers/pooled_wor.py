"""Torch port of ``resispec.verifiers.pooled_wor.PooledWithoutReplacement``: cut, thinned scans, then
single-draft verification of the selected WOR candidate. Exact (docs/pooled_wor.md).

Plan: the NumPy plan (``resispec.verifiers.pooled_wor_plan``), built once per distinct row on the host
and stacked into tensors, so the plans equal NumPy's by construction. The plan is a sequential scan over
the tokens (each token's thinning depends on the earlier ones) with race integrals at 30-40 nodes,
compiled (numba); no batched form of it exists yet, and it costs about 10-30 ms per row at V = 2049
(docs/pooled_wor.md, Speed).

Decisions, batched over nodes with the NumPy twin's uniform layout (``uniforms_needed(k) = k + 2``):
the active block (the inside block iff every candidate is in the cut) is visited in scan order; the
first visited candidate i with ``u[:, i] < theta`` is selected, else the last visited; accept it iff
``u[:, k] < accept(y)``, else emit the residual by inverse CDF with ``u[:, k + 1]``. Returned index:
the selected candidate's position on acceptance, -1 for a residual draw; a rejection with an empty
residual emits the selected candidate. Shapes: p, q (B, V); candidates (B, k); u (B, k + 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from engine.verifiers.base import TorchVerifier
from resispec.sampling import RowInverseCDF
from resispec.validation import as_count
from resispec.verifiers.pooled_wor import PooledWithoutReplacement
from resispec.verifiers.pooled_wor_plan import pooled_wor_plan


@dataclass(frozen=True)
class TorchPooledWorPlan:
    """The NumPy plans of B nodes as tensors (by token id, (B, V)): ``theta``, ``accept``,
    ``scan_position`` (long), ``inside`` (bool); ``first_drawn`` (B,) bool; ``residual`` the prepared
    inverse CDF of ``(p - t)+`` and ``has_residual`` (B,) bool."""

    theta: torch.Tensor
    accept: torch.Tensor
    scan_position: torch.Tensor
    inside: torch.Tensor
    first_drawn: torch.Tensor
    residual: RowInverseCDF
    has_residual: torch.Tensor


def pooled_wor_plans(p: torch.Tensor, q: torch.Tensor, k: int) -> TorchPooledWorPlan:
    """The NumPy plan of every distinct row, stacked and spread back over the rows (validated float64
    ``p``, ``q`` (B, V); nodes with the same pair share one plan)."""
    pairs = np.concatenate([p.cpu().numpy(), q.cpu().numpy()], axis=1)
    distinct, row_of = np.unique(pairs, axis=0, return_inverse=True)
    vocab = p.shape[1]
    plans = [pooled_wor_plan(pair[:vocab], pair[vocab:], k) for pair in distinct]
    spread = torch.as_tensor(row_of.reshape(-1), device=p.device)

    def stack(name: str) -> torch.Tensor:
        return torch.as_tensor(np.stack([getattr(plan, name) for plan in plans]), device=p.device)[spread]

    residual = stack("residual")
    first_drawn = torch.tensor([plan.first_drawn for plan in plans], device=p.device)[spread]
    return TorchPooledWorPlan(theta=stack("theta"), accept=stack("accept"), scan_position=stack("scan_position"),
                              inside=stack("inside"), first_drawn=first_drawn, residual=RowInverseCDF(residual),
                              has_residual=(residual > 0).any(dim=-1))


def select(plan: TorchPooledWorPlan, candidates: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Index (B,) of each node's selected candidate (``pooled_wor_plan.select``, batched)."""
    batch, k = candidates.shape
    inside = plan.inside.gather(1, candidates)
    active = inside.all(dim=1, keepdim=True) | ~inside
    draw_order = torch.arange(k, device=candidates.device).expand(batch, k)
    key = torch.where(plan.first_drawn[:, None], draw_order, plan.scan_position.gather(1, candidates))
    key = torch.where(active | plan.first_drawn[:, None], key, torch.iinfo(torch.long).max)
    visit = torch.argsort(key, dim=1, stable=True)
    count = torch.where(plan.first_drawn, k, active.sum(dim=1))
    takes = u.gather(1, visit) < plan.theta.gather(1, candidates.gather(1, visit))
    position = torch.arange(k, device=candidates.device)
    stops = (takes & (position < count[:, None])) | (position == count[:, None] - 1)
    first = torch.argmax(stops.to(torch.int8), dim=1)
    return visit.gather(1, first[:, None])[:, 0]


class TorchPooledWithoutReplacement(TorchVerifier):
    """Cut plus thinned scans over WOR candidates, then single-draft speculative sampling. Exact."""

    numpy_twin = PooledWithoutReplacement

    def uniforms_needed(self, k: int) -> int:
        """``k + 2``: a thinning uniform per candidate, then accept and residual."""
        return as_count(k) + 2

    def _prepare(self, p: torch.Tensor, q: torch.Tensor, k: int) -> TorchPooledWorPlan:
        return pooled_wor_plans(p, q, k)

    def _decide(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor, u: torch.Tensor,
                plan: TorchPooledWorPlan) -> tuple[torch.Tensor, torch.Tensor]:
        k = candidates.shape[1]
        index = select(plan, candidates, u[:, :k])
        selected = candidates.gather(1, index[:, None])[:, 0]
        accepted = (u[:, k] < plan.accept.gather(1, selected[:, None])[:, 0]) | ~plan.has_residual
        return (torch.where(accepted, selected, plan.residual(u[:, k + 1])),
                torch.where(accepted, index, -1))
