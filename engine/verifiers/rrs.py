"""Torch port of ``resispec.verifiers.rrs.RRS``: recursive rejection sampling, i.i.d. candidates, batched.

``r_1 = p``. Step i accepts ``x_i`` with probability ``min(1, r_i(x_i)/q(x_i))``; on rejection
``r_{i+1} = norm((r_i - q)+)``; all rejected: emit from ``r_{k+1}``. Exact (SpecInfer; MCSD "with
replacement"). Shapes: p, q (B, V); candidates (B, k).
"""

from __future__ import annotations

import torch

from engine.verifiers.base import SequentialTorchVerifier, TorchStepGenerator
from engine.verifiers.rejection import rejection_step
from resispec.verifiers.rrs import RRS


class TorchRRS(SequentialTorchVerifier):
    """Recursive rejection sampling over i.i.d. draws from q, all nodes at once. Exact."""

    numpy_twin = RRS

    def _steps(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor, plan: None) -> TorchStepGenerator:
        target = p
        for i in range(candidates.shape[1]):
            acceptance, target = rejection_step(target, q, candidates[:, i])
            yield acceptance
        return target
