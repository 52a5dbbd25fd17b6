"""Torch port of ``resispec.verifiers.pooled.Pooled``: exact, acceptance-optimal for i.i.d. candidates.

Per node: *select* one of the k candidates by the priority-score rule of the node's pooled plan
(``engine.verifiers.pooling``), whose selected token has law ``t = max(p, mu q)`` on the optimal cut
``H*`` and ``min(p, lam q)`` off it; then accept the selected y with probability
``min(1, p(y)/t(y))``, else emit from ``norm((p - t)+)``. Exact (``min(p, t) + (p - t)+ = p``), with
acceptance ``sum min(p, t) = alpha* = 1 + p(H*) - q(H*)^k``, the i.i.d. optimum (docs/pooled.md).

Uniform layout (``uniforms_needed(k) = 2k + 2``, the NumPy twin's): ``u[:, i]`` (i < k) the interval
of candidate i's score, ``u[:, k + i]`` its position inside the interval, ``u[:, 2k]`` accept the
selected candidate iff ``u[:, 2k] < accept(y)``, ``u[:, 2k + 1]`` the residual by inverse CDF over
token ids ascending. Returned index: the selected candidate's position on acceptance, -1 for a
residual draw; a selected token with ``p = 0`` is never accepted, and a residual left without mass by
rounding falls back to p (the NumPy twin's rule).
Shapes: p, q (B, V); candidates (B, k); u (B, 2k + 2).

Cost: the batched plan (one ratio sort per row and O(V log V) batched work per node, see
``engine.verifiers.pooling``), then O(k log V) per node: one ``searchsorted`` per candidate over its
row's pools, one lookup, one ``searchsorted`` over the residual's prepared cumulative sum.
"""

from __future__ import annotations

import torch

from engine.verifiers.base import TorchVerifier
from engine.verifiers.pooling import TorchPooledPlan, pooled_plan, select
from resispec.validation import as_count
from resispec.verifiers.pooled import Pooled


class TorchPooled(TorchVerifier):
    """Pooled priority-score selection, then single-draft speculative sampling, all nodes at once. Exact."""

    numpy_twin = Pooled

    def uniforms_needed(self, k: int) -> int:
        """``2k + 2``: an interval and a position uniform per candidate, then accept and residual."""
        return 2 * as_count(k) + 2

    def _prepare(self, p: torch.Tensor, q: torch.Tensor, k: int) -> TorchPooledPlan:
        return pooled_plan(p, q, k)

    def _decide(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor, u: torch.Tensor,
                plan: TorchPooledPlan) -> tuple[torch.Tensor, torch.Tensor]:
        k = candidates.shape[1]
        index = select(plan, q, candidates, u[:, :k], u[:, k:2 * k])
        selected = candidates.gather(1, index[:, None])[:, 0]
        accepted = u[:, 2 * k] < plan.accept.gather(1, selected[:, None])[:, 0]
        return (torch.where(accepted, selected, plan.residual(u[:, 2 * k + 1])),
                torch.where(accepted, index, -1))
