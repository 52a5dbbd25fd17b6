"""Torch port of ``resispec.verifiers.topk.TopK``: verification of the draft's top-k tokens, batched.

Accept ``x_1`` with probability ``p(x_1)``; else zero ``x_1`` in p, renormalise, accept ``x_2`` with
its new mass; ... All rejected: emit from p with every candidate zeroed (EAGLE-2 style; the draft
ratio is taken as 1). Exact. Shapes: p, q (B, V); candidates (B, k) = each row's top-k of q.
"""

from __future__ import annotations

import torch

from engine.verifiers.base import SequentialTorchVerifier, TorchStepGenerator
from resispec.verifiers.topk import TopK


class TorchTopK(SequentialTorchVerifier):
    """Sequential verification of deterministic top-k candidates against p. Exact.

    A node whose remaining mass is 0 at step i accepted earlier with certainty; its ``0/0`` there is
    never compared.
    """

    numpy_twin = TopK

    def _steps(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor, plan: None) -> TorchStepGenerator:
        remaining = p.clone()
        for i in range(candidates.shape[1]):
            index = candidates[:, i:i + 1]
            yield remaining.gather(1, index)[:, 0] / remaining.sum(dim=-1)
            remaining.scatter_(1, index, 0.0)
        return remaining
