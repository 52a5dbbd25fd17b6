"""KV-cache surgery: after a tree forward, keep the accepted nodes' entries and drop the rest."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from transformers import DynamicCache


def keep_entries(cache: DynamicCache, prefix_len: int, keep: Sequence[int]) -> None:
    """Keep cached positions ``[0, prefix_len)`` and ``prefix_len + keep[i]`` (in that order); drop the rest.

    Every layer holds keys and values [batch, kv_heads, seq, head_dim]; afterwards ``seq`` is
    ``prefix_len + len(keep)``. The kept entries were computed at their final positions (a tree node of
    depth d at ``prefix_len + d``, with ``keep`` a root-to-node path), so no rotary re-encoding is needed.
    Uses only the public ``crop`` and ``update`` of the cache, so its bookkeeping stays consistent.
    """
    from transformers.cache_utils import DynamicLayer  # here: `TreeLM`'s caches alone need transformers

    if not all(type(layer) is DynamicLayer for layer in cache.layers):
        raise TypeError(f"keep_entries needs a cache of full-attention DynamicLayers, got {cache.layers}")
    tail = cache.get_seq_length() - prefix_len
    if tail < 0 or any(not 0 <= k < tail for k in keep):
        raise ValueError(f"keep must index the {tail} entries past prefix_len={prefix_len}, got {list(keep)}")
    if tail == 0:
        return
    positions = torch.tensor([prefix_len + k for k in keep], dtype=torch.long)
    kept = [
        (layer.keys.index_select(-2, positions.to(layer.keys.device)),
         layer.values.index_select(-2, positions.to(layer.values.device)))
        for layer in cache.layers
    ]
    cache.crop(-tail)
    for layer_idx, (keys, values) in enumerate(kept):
        cache.update(keys, values, layer_idx)
