"""Torch port of ``resispec.verifiers.rrs_wor.RRSWithoutReplacement``: rrs over WOR candidates, batched.

As rrs, with the masked proposal ``q_i = norm(q with x_1..x_{i-1} set to 0)`` of each node in place
of q, both in the ratio ``min(1, r_i(x_i)/q_i(x_i))`` and in ``r_{i+1} = norm((r_i - q_i)+)``
(MCSD "without replacement"; RSD-C; EAGLE-1). Exact. The undrawn mass is summed directly, never
``1 - sum(drawn)``. Shapes: p, q (B, V); candidates (B, k), distinct within a row.
"""

from __future__ import annotations

import torch

from engine.verifiers.base import SequentialTorchVerifier, TorchStepGenerator
from engine.verifiers.rejection import rejection_step
from resispec.verifiers.rrs_wor import RRSWithoutReplacement


class TorchRRSWithoutReplacement(SequentialTorchVerifier):
    """Recursive rejection sampling over WOR draws with each node's masked proposals q_i. Exact."""

    numpy_twin = RRSWithoutReplacement

    def _steps(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor, plan: None) -> TorchStepGenerator:
        target, undrawn = p, q.clone()
        for i in range(candidates.shape[1]):
            proposal = undrawn / undrawn.sum(dim=-1, keepdim=True)
            acceptance, target = rejection_step(target, proposal, candidates[:, i])
            yield acceptance
            undrawn.scatter_(1, candidates[:, i:i + 1], 0.0)
        return target
