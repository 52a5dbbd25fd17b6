"""The prompt-lookup n-gram draft: its matches, its q, its per-node contexts in a tree, and its bookkeeping."""

from __future__ import annotations

import pytest
import torch

from resispec.engine.drafts import Draft
from resispec.engine.drafts.layer_skip import LayerSkipDraft
from resispec.engine.drafts.ngram import DEFAULT_MAX_N, DEFAULT_MIN_N, GAP, NGramDraft, continuation_counts
from resispec.engine.drafts.registry import assistant_model, check_draft_name, make_draft
from resispec.engine.model.tiny import tiny_llama
from resispec.engine.runtime.tree import CandidateTree


def test_the_longest_recurring_suffix_decides_and_counts_its_continuations():
    context = [1, 2, 3, 9, 2, 3, 7, 1, 2, 3]
    assert continuation_counts(context, max_n=4, min_n=1) == {9: 1}  # "1 2 3" recurs once, followed by 9
    assert continuation_counts(context, max_n=2, min_n=1) == {9: 1, 7: 1}  # "2 3": followed by 9, then 7
    assert continuation_counts([5, 1, 5, 2, 5], max_n=3, min_n=1) == {1: 1, 2: 1}
    assert continuation_counts([1, 2, 3, 4], max_n=4, min_n=1) is None  # nothing recurs
    assert continuation_counts([4, 1, 2, 4], max_n=4, min_n=2) is None  # only a one-token match
    assert continuation_counts([4, 4], max_n=4, min_n=1) == {4: 1}


def test_q_is_the_empirical_continuation_law_and_uniform_without_a_match():
    draft = NGramDraft(vocab_size=10, max_n=3, min_n=1)
    q = torch.softmax(draft.q_logits([5, 1, 5, 2, 5, 1, 6, 5]).double(), dim=-1)  # "5" followed by 1, 2, 1
    expected = torch.zeros(10, dtype=torch.float64)
    expected[[1, 2]] = torch.tensor([2 / 3, 1 / 3], dtype=torch.float64)
    torch.testing.assert_close(q, expected, rtol=0, atol=1e-7)  # float32 log counts
    assert q[[0, 3, 9]].max() < 2 * torch.exp(torch.tensor(-GAP, dtype=torch.float64))
    assert (q > 0).all()  # full support: without-replacement drafting can always draw k distinct tokens
    assert torch.equal(draft.q_logits([1, 2, 3]), torch.zeros(10))
    assert draft.proposes([5, 1, 5]) and not draft.proposes([1, 2, 3])


def test_every_tree_node_matches_its_own_path_after_the_prefix():
    draft = NGramDraft(vocab_size=10, max_n=3, min_n=1)
    assert isinstance(draft, Draft)
    prompt = torch.tensor([4, 7, 8, 4, 7, 9, 4])
    draft.prefill(prompt)
    tree = CandidateTree.from_branching((2, 1))  # root 4; children 7, 8; grandchildren
    tokens = torch.tensor([4, 7, 8, 9, 3])
    logits = draft.grow(tokens, tree.parents)
    for node in range(tree.num_nodes):
        context = prompt[:-1].tolist() + tokens[tree.path(node)].tolist()
        assert torch.equal(logits[node], draft.q_logits(context)), node


def test_commit_keeps_the_accepted_path_and_learns_the_unfed_tokens():
    draft = NGramDraft(vocab_size=10, max_n=2, min_n=1)
    draft.prefill(torch.tensor([1, 2, 3, 1]))
    draft.grow(torch.tensor([1, 2, 5]), torch.tensor([-1, 0, 0]))  # the root and two children; leaves unfed
    draft.commit(torch.tensor([1, 5, 6]))  # root, the second child, then a leaf it never fed
    logits = draft.grow(torch.tensor([2]), torch.tensor([-1]))  # the token emitted after them is the next root
    assert torch.equal(logits[0], draft.q_logits([1, 2, 3, 1, 5, 6, 2]))
    assert not torch.equal(logits[0], draft.q_logits([1, 2, 3, 1, 2, 5, 6, 2]))


def test_bad_suffix_lengths_are_named():
    with pytest.raises(ValueError, match="ngram: need 1 <= min_n <= max_n"):
        NGramDraft(10, max_n=1, min_n=2)


def test_the_registry_builds_the_new_drafts_by_name():
    target = tiny_llama(seed=5, num_layers=3)
    ngram, longer = make_draft("ngram", target), make_draft("ngram-5", target)
    assert (ngram.min_n, ngram.max_n, longer.min_n, longer.max_n) == (DEFAULT_MIN_N, DEFAULT_MAX_N, 5, 5)
    skip = make_draft("layer-skip:0,2", target)
    assert isinstance(skip, LayerSkipDraft) and skip.source_layers == [0, 2]
    assert assistant_model(ngram) is None and assistant_model(skip) is None
    assert assistant_model(make_draft("early-exit-1", target)) is not None
    with pytest.raises(ValueError, match=r"^draft: layer-skip has no measured layer set .* layer-skip:0,2,5"):
        make_draft("layer-skip", target)
    with pytest.raises(ValueError, match=r"layer-skip layers must be strictly ascending in \[0, 2\]"):
        make_draft("layer-skip:0,3", target)
    for name in ("ngram-0", "ngram-", "layer-skip:", "layer-skip:1,", "layer-skip-2"):
        with pytest.raises(ValueError, match="unknown draft"):
            check_draft_name(name)
