"""Reference computations for the engine tests: plain forwards without any cache."""

from __future__ import annotations

import torch
from torch import nn


@torch.no_grad()
def last_logits(model: nn.Module, sequence: torch.Tensor) -> torch.Tensor:
    """Logits (float [V]) after `sequence` (long [T]) from a fresh forward, no cache, default causal mask."""
    return model(sequence[None]).logits[0, -1]
