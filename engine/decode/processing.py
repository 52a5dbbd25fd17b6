"""Logits to probabilities, with the same temperature, top-k and top-p for the target p and the draft q.

The law is the core's (`resispec.processing`, written once over the array API): ``Sampling`` is its
``Processing``, and both rows are computed in float64. Exactness is relative to the *processed* target:
speculative decoding emits tokens distributed as ``p = process(target logits)``, the distribution plain
sampling would use. The draft is processed the same way for T > 0. Temperature 0 is greedy: p is one-hot at
the target's argmax (ties: lowest id); the draft then keeps T = 1 (with the same top-k/top-p), because a
one-hot q cannot supply several distinct candidates and the draft's law never affects exactness - every
exact verifier emits argmax p.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from resispec.processing import Processing as Sampling
from resispec.processing import process_logits

__all__ = ["Sampling", "draft_probs", "target_probs"]


def target_probs(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """The processed target p (float64 [M, V]) of logits [M, V]; one-hot at the argmax when greedy."""
    return process_logits(logits.double(), sampling)


def draft_probs(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """The processed draft q (float64 [M, V]) of logits [M, V]; at temperature 0 it keeps T = 1 (module doc)."""
    return process_logits(logits.double(), replace(sampling, temperature=sampling.temperature or 1.0))
