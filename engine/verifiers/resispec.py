"""Torch port of ``resispec.verifiers.resispec.ResiSpec``: exact residual shaping, batched.

With each node's schedule ``T_1 >= ... >= T_k >= T_{k+1} = 0``, ``R_j = 1 - g(T_1) + g(T_j)``
(``engine.verifiers.shaping``), step j accepts candidate x with probability
``a_j(x) = [min(p(x), T_j q(x)) - min(p(x), T_{j+1} q(x))] / (R_j q(x))`` (0 where ``R_j = 0``),
clipped to [0, 1]; all rejected (probability ``z = 1 - g(T_1)``): emit from ``norm((p - T_1 q)+)``.
Exact for any thresholds with ``T_j - T_{j+1} <= R_j``. Shapes: p, q (B, V); candidates (B, k).
"""

from __future__ import annotations

import torch

from engine.verifiers.base import SequentialTorchVerifier, TorchStepGenerator
from engine.verifiers.shaping import TorchSchedule, schedule_from_profile
from resispec.row_ratio_profile import RowRatioProfile
from resispec.verifiers.resispec import ResiSpec


class TorchResiSpec(SequentialTorchVerifier):
    """Residual shaping with each node's optimal threshold schedule. Exact."""

    numpy_twin = ResiSpec

    def _prepare(self, p: torch.Tensor, q: torch.Tensor, k: int) -> TorchSchedule:
        return schedule_from_profile(RowRatioProfile(p, q), k)

    def _steps(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor,
               plan: TorchSchedule) -> TorchStepGenerator:
        thresholds = torch.cat([plan.T, plan.T.new_zeros(plan.T.shape[0], 1)], dim=-1)
        for j in range(candidates.shape[1]):
            index = candidates[:, j:j + 1]
            p_x, q_x = p.gather(1, index)[:, 0], q.gather(1, index)[:, 0]
            accepted = torch.minimum(p_x, thresholds[:, j] * q_x) - torch.minimum(p_x, thresholds[:, j + 1] * q_x)
            reach = plan.R[:, j]
            yield torch.where(reach > 0, (accepted / (reach * q_x)).clamp(min=0.0, max=1.0), 0.0)
        return (p - plan.T[:, :1] * q).clamp_(min=0.0)
