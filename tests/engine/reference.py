"""Reference computations for the engine tests: plain forwards without any cache."""

from __future__ import annotations

import torch
from torch import nn


@torch.no_grad()
def last_logits(model: nn.Module, sequence: torch.Tensor) -> torch.Tensor:
    """Logits (float [V]) after `sequence` (long [T]) from a fresh forward, no cache, default causal mask."""
    return model(sequence[None]).logits[0, -1]


@torch.no_grad()
def explicit_early_exit_logits(model: nn.Module, num_layers: int, sequence: torch.Tensor) -> torch.Tensor:
    """Float [T, V]: embed, run decoder layers 0..num_layers-1 under a causal mask, final norm, head."""
    length = len(sequence)
    positions = torch.arange(length)[None]
    hidden = model.model.embed_tokens(sequence[None])
    rotary = model.model.rotary_emb(hidden, positions)
    causal = torch.full((length, length), float("-inf"), dtype=hidden.dtype).triu(1)[None, None]
    for layer in model.model.layers[:num_layers]:
        hidden = layer(hidden, attention_mask=causal, position_embeddings=rotary, position_ids=positions)
    return model.lm_head(model.model.norm(hidden))[0]
