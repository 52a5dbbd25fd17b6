"""keep_entries: gathering accepted tree entries into place in a DynamicCache."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache

from resispec.engine.runtime.kv import keep_entries


def filled_cache(num_layers: int, length: int) -> DynamicCache:
    """A cache whose entry at position t of layer l holds keys t + 100 l and values -(t + 100 l)."""
    cache = DynamicCache()
    for layer in range(num_layers):
        keys = torch.arange(length, dtype=torch.float32) + 100 * layer
        keys = keys.reshape(1, 1, length, 1).expand(1, 2, length, 3)
        cache.update(keys.clone(), -keys.clone(), layer)
    return cache


@pytest.mark.parametrize("keep", [[], [0], [2, 5], [1, 3, 4, 6]])
def test_keeps_prefix_then_selected_entries(keep):
    prefix_len, tree_len = 4, 7
    cache = filled_cache(num_layers=3, length=prefix_len + tree_len)
    keep_entries(cache, prefix_len, keep)
    expected = torch.tensor(list(range(prefix_len)) + [prefix_len + k for k in keep], dtype=torch.float32)
    assert cache.get_seq_length() == prefix_len + len(keep)
    for index, layer in enumerate(cache.layers):
        assert torch.equal(layer.keys[0, 1, :, 2], expected + 100 * index)
        assert torch.equal(layer.values[0, 0, :, 0], -(expected + 100 * index))


def test_out_of_range_keep_rejected():
    cache = filled_cache(num_layers=1, length=5)
    with pytest.raises(ValueError, match="keep must index the 2 entries"):
        keep_entries(cache, 3, [2])
