"""Torch port of ``resispec.verifiers.ears.EARS``: relaxed-acceptance rrs (lossy by design). BIASED.

Known-biased negative control. As rrs, but candidate i is accepted iff
``u < min(1, r_i(x)/q(x) + tau (1 - max r_i))`` (``tau = resispec.verifiers.ears.TAU``); the residual
is rrs's ``norm((r_i - q)+)``, so the extra accepted mass is never paid back. Shapes: p, q (B, V);
candidates (B, k).
"""

from __future__ import annotations

import torch

from engine.verifiers.base import SequentialTorchVerifier, TorchStepGenerator
from engine.verifiers.rejection import rejection_step
from resispec.verifiers.ears import EARS, TAU


class TorchEARS(SequentialTorchVerifier):
    """Relaxed-acceptance rrs; a known-biased control."""

    numpy_twin = EARS

    def _steps(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor, plan: None) -> TorchStepGenerator:
        target = p
        for i in range(candidates.shape[1]):
            slack = TAU * (1.0 - target.amax(dim=-1))
            acceptance, target = rejection_step(target, q, candidates[:, i], slack)
            yield acceptance
        return target
