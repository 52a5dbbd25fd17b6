"""Torch port of ``resispec.verifiers.rrs_skip_dup.RRSSkipDuplicates``: rrs skipping repeats. BIASED.

Known-biased negative control. As rrs, except that a candidate equal to an earlier rejected one is
rejected outright and the residual is not updated (``a = 0``, ``r_{i+1} = r_i``). In a node that is
still verifying at step i every earlier candidate was rejected, so "earlier rejected" is "earlier".
Shapes: p, q (B, V); candidates (B, k).
"""

from __future__ import annotations

import torch

from engine.verifiers.base import SequentialTorchVerifier, TorchStepGenerator
from engine.verifiers.rejection import rejection_step
from resispec.verifiers.rrs_skip_dup import RRSSkipDuplicates


class TorchRRSSkipDuplicates(SequentialTorchVerifier):
    """rrs that skips repeated rejected candidates; a known-biased control."""

    numpy_twin = RRSSkipDuplicates

    def _steps(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor, plan: None) -> TorchStepGenerator:
        target = p
        for i in range(candidates.shape[1]):
            repeat = (candidates[:, :i] == candidates[:, i:i + 1]).any(dim=-1)
            acceptance, next_target = rejection_step(target, q, candidates[:, i])
            yield torch.where(repeat, 0.0, acceptance)
            target = torch.where(repeat[:, None], target, next_target)
        return target
