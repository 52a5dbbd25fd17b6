"""The layer-skip self-draft: the target's kept layers (shared, not copied), against transformers' forward."""

from __future__ import annotations

import pytest
import torch

from resispec.engine.drafts import decoder_view
from resispec.engine.drafts.layer_skip import LayerSkipDraft
from resispec.engine.model.tiny import tiny_llama
from resispec.engine.runtime.compact_lm import CompactLM, prepared_weights
from resispec.engine.runtime.tree import CandidateTree


@pytest.fixture(scope="module")
def target():
    return tiny_llama(seed=5, num_layers=3)


@pytest.mark.parametrize("layers", [[0, 2], [1], [0, 1, 2]])
def test_the_draft_runs_the_kept_layers_only(target, layers):
    draft = LayerSkipDraft(target, layers)
    sequence = torch.tensor([3, 1, 4, 1, 5, 7])
    draft.prefill(sequence[:3])
    logits = draft.grow(sequence[2:], CandidateTree.from_branching((1, 1, 1)).parents)
    view = decoder_view(target, [target.model.layers[i] for i in layers], target.model.norm)
    with torch.no_grad():
        expected = view(sequence[None], use_cache=False).logits[0, 2:]
    torch.testing.assert_close(logits, expected, rtol=0, atol=1e-4)


def test_it_shares_the_targets_prepared_layers_and_starts_on_its_prompt_cache(target):
    draft, full = LayerSkipDraft(target, [0, 2]), CompactLM(target)
    shared = prepared_weights(target)
    assert draft.weights.layers == [shared.layers[0], shared.layers[2]] and draft.weights.head is shared.head
    prompt = torch.tensor([2, 6, 1, 3])
    full.prefill(prompt)
    assert draft.shares_prompt_cache_with(full) and not draft.shares_prompt_cache_with(CompactLM(tiny_llama(1)))
    draft.prefill_from(full, prompt)
    assert torch.equal(draft._keys[:, :, :3], full._keys[[0, 2], :, :3])
    assert torch.equal(draft._values[:, :, :3], full._values[[0, 2], :, :3])


@pytest.mark.parametrize("layers", [[], [1, 0], [0, 0], [3], [-1]])
def test_bad_layer_sets_are_named(target, layers):
    with pytest.raises(ValueError, match=r"layer-skip layers must be strictly ascending in \[0, 2\]"):
        LayerSkipDraft(target, layers)
