"""Drafts: the early-exit draft against an explicit first-L-layers computation; level-by-level expansion."""

from __future__ import annotations

import pytest
import torch

from resispec.engine.decode.expand import expand_tree
from resispec.engine.drafts import Draft, EarlyExitDraft
from resispec.engine.model.tiny import tiny_llama
from resispec.engine.runtime.tree import CandidateTree
from resispec.engine.runtime.tree_lm import TreeLM
from tests.engine.reference import explicit_early_exit_logits, last_logits

ATOL = 1e-4


@pytest.mark.parametrize("num_layers", [1, 2, 3])
def test_early_exit_equals_first_layers(num_layers):
    target = tiny_llama(seed=5, num_layers=3)
    draft = EarlyExitDraft(target, num_layers)
    sequence = torch.tensor([3, 1, 4, 1, 5, 7])
    draft.prefill(sequence[:3])
    tree = CandidateTree.from_branching((1, 1, 1))  # a chain: the rest of the sequence
    logits = draft.grow(sequence[2:], tree.parents)
    torch.testing.assert_close(logits, explicit_early_exit_logits(target, num_layers, sequence)[2:], rtol=0, atol=ATOL)


def test_early_exit_shares_weights_and_layer_count():
    target = tiny_llama(seed=5, num_layers=3)
    draft = EarlyExitDraft(target, 2)
    target_storage = {p.data_ptr() for p in target.parameters()}
    assert {p.data_ptr() for p in draft.model.parameters()} <= target_storage
    assert draft.model.config.num_hidden_layers == 2 and target.config.num_hidden_layers == 3
    assert isinstance(draft, Draft) and draft.vocab_size == target.config.vocab_size
    with pytest.raises(ValueError, match=r"num_layers must be in \[1, 3\]"):
        EarlyExitDraft(target, 4)


def test_full_depth_early_exit_is_the_target():
    target = tiny_llama(seed=5, num_layers=3)
    draft, full = EarlyExitDraft(target, 3), TreeLM(target)
    prompt, tree = torch.tensor([1, 2, 3]), CandidateTree.from_branching((2, 2))
    tokens = torch.tensor([3, 0, 1, 2, 3, 4, 5])
    draft.prefill(prompt)
    full.prefill(prompt)
    torch.testing.assert_close(draft.grow(tokens, tree.parents), full.grow(tokens, tree.parents), rtol=0, atol=0)


def test_expand_tree_follows_choose_and_returns_q_at_internal_nodes(tiny_models):
    _, q_model = tiny_models
    draft = TreeLM(q_model)
    prompt = torch.tensor([2, 7, 1])
    draft.prefill(prompt)
    tree = CandidateTree.from_branching((3, 2, 1))

    def top_k(q_logits: torch.Tensor, k: int) -> torch.Tensor:
        return q_logits.topk(k, dim=-1).indices

    drafted = expand_tree(draft, tree, root_token=1, choose=top_k)
    tokens, q_logits = drafted.tokens, drafted.q_logits
    assert drafted.row.tolist() == list(range(tree.num_nodes))  # distinct children: one row per node
    internal = tree.level(tree.depth).start
    assert tokens.shape == (tree.num_nodes,) and q_logits.shape == (internal, q_model.config.vocab_size)
    assert tokens[0] == 1 and draft.tree_size == internal
    for node in range(internal):
        expected = last_logits(q_model, torch.cat([prompt[:-1], tokens[tree.path(node)]]))
        torch.testing.assert_close(q_logits[node], expected, rtol=0, atol=ATOL)
        children = (tree.parents == node).nonzero().flatten()
        assert tokens[children].tolist() == top_k(q_logits[node], len(children)).tolist()


def test_equal_prefixes_share_a_row_and_keep_their_own_children(tiny_models):
    p_model, q_model = tiny_models
    prompt = torch.tensor([2, 7, 1])
    tree = CandidateTree.from_branching((3, 2))
    generator = torch.Generator().manual_seed(0)

    def repeat_first(q_logits: torch.Tensor, k: int) -> torch.Tensor:  # first child always token 4
        drawn = torch.randint(0, q_logits.shape[-1], (q_logits.shape[0], k), generator=generator)
        drawn[:, :2] = 4
        return drawn

    draft = TreeLM(q_model)
    draft.prefill(prompt)
    drafted = expand_tree(draft, tree, root_token=1, choose=repeat_first)
    rows = len(drafted.row_tokens)
    assert rows < tree.num_nodes and draft.tree_size == len(set(drafted.row[: tree.level(1).stop].tolist()))
    target = TreeLM(p_model)
    target.prefill(prompt)
    by_row = target.grow(drafted.row_tokens, drafted.row_parents)[drafted.row]
    for node in range(tree.num_nodes):
        path = drafted.tokens[tree.path(node)]
        assert drafted.row_tokens[drafted.row[node]] == drafted.tokens[node]
        torch.testing.assert_close(by_row[node], last_logits(p_model, torch.cat([prompt[:-1], path])),
                                   rtol=0, atol=ATOL)


@pytest.mark.real_model
def test_early_exit_checkpoint_loads_as_the_first_layers_of_the_real_target(real_target):
    from transformers import AutoModelForCausalLM

    from resispec.engine.drafts.early_exit import early_exit_checkpoint

    target, _ = real_target
    folder = early_exit_checkpoint(2)  # a plain checkpoint, for vLLM's draft-model proposer (docs/vllm.md)
    draft = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.float32)
    assert draft.config.num_hidden_layers == 2
    sequence = torch.tensor([1, 504, 3458, 314, 4849, 30])
    torch.testing.assert_close(draft(sequence[None]).logits[0, -1], explicit_early_exit_logits(target, 2, sequence)[-1],
                               rtol=0, atol=ATOL)
    assert early_exit_checkpoint(2) == folder  # written once
