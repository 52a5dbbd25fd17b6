"""TreeLM on the tiny random model: one-pass tree logits, level-by-level growth, commits across rounds.

Reference everywhere: a fresh forward without cache on (accepted prefix + the node's path).
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from resispec.engine.runtime.tree import CandidateTree
from resispec.engine.runtime.tree_lm import TreeLM
from tests.engine.reference import last_logits

ATOL = 1e-4  # float32
VOCAB = 8

branchings = st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple)
seeds = st.integers(0, 2**31 - 1)


def random_tokens(generator: torch.Generator, count: int) -> torch.Tensor:
    """Long [count], token ids uniform over the tiny vocabulary."""
    return torch.randint(0, VOCAB, (count,), generator=generator)


def tree_tokens(tree: CandidateTree, root: int, generator: torch.Generator) -> torch.Tensor:
    """Long [N]: `root` at node 0, random tokens below."""
    return torch.cat([torch.tensor([root]), random_tokens(generator, tree.num_nodes - 1)])


def assert_tree_logits(model, accepted: torch.Tensor, tree: CandidateTree, tokens: torch.Tensor, logits) -> None:
    """Row i of `logits` equals a fresh forward on `accepted` (all but the root) + node i's path."""
    for node in range(tree.num_nodes):
        expected = last_logits(model, torch.cat([accepted, tokens[tree.path(node)]]))
        torch.testing.assert_close(logits[node], expected, rtol=0, atol=ATOL, msg=f"node {node}")


@settings(max_examples=25, deadline=None)
@given(branching=branchings, prompt_len=st.integers(1, 6), seed=seeds)
def test_one_pass_tree_logits_equal_sequential(tiny_models, branching, prompt_len, seed):
    p_model, _ = tiny_models
    generator = torch.Generator().manual_seed(seed)
    prompt = random_tokens(generator, prompt_len)
    tree = CandidateTree.from_branching(branching)
    tokens = tree_tokens(tree, int(prompt[-1]), generator)
    target = TreeLM(p_model)
    target.prefill(prompt)
    logits = target.grow(tokens, tree.parents)
    assert logits.shape == (tree.num_nodes, VOCAB)
    assert_tree_logits(p_model, prompt[:-1], tree, tokens, logits)


def test_level_by_level_equals_one_pass(tiny_models):
    p_model, _ = tiny_models
    generator = torch.Generator().manual_seed(1)
    prompt = random_tokens(generator, 5)
    tree = CandidateTree.from_branching((4, 2, 2, 1))
    tokens = tree_tokens(tree, int(prompt[-1]), generator)
    one_pass, by_level = TreeLM(p_model), TreeLM(p_model)
    one_pass.prefill(prompt)
    by_level.prefill(prompt)
    levels = [by_level.grow(tokens[tree.level(d)], tree.parents[tree.level(d)]) for d in range(tree.depth + 1)]
    torch.testing.assert_close(torch.cat(levels), one_pass.grow(tokens, tree.parents), rtol=0, atol=ATOL)


@settings(max_examples=25, deadline=None)
@given(
    rounds=st.lists(
        st.tuples(branchings, st.integers(0, 10**6), st.integers(0, 2), st.booleans()), min_size=1, max_size=4
    ),
    seed=seeds,
)
def test_commit_keeps_exactly_the_accepted_sequence(tiny_models, rounds, seed):
    """Rounds of: grow a tree (whole, or all but the leaves as a draft does), accept a random root-to-node
    path plus 0-2 tokens beyond the tree, then a bonus token as the next root. Every tree scored on top of
    the kept cache must match fresh forwards on the accepted sequence."""
    p_model, _ = tiny_models
    generator = torch.Generator().manual_seed(seed)
    prompt = random_tokens(generator, 3)
    lm = TreeLM(p_model)
    lm.prefill(prompt)
    accepted, root = prompt[:-1], int(prompt[-1])
    for branching, node_draw, extra, skip_leaves in rounds:
        tree = CandidateTree.from_branching(branching)
        tokens = tree_tokens(tree, root, generator)
        grown = tree.level(tree.depth).start if skip_leaves else tree.num_nodes
        logits = lm.grow(tokens[:grown], tree.parents[:grown])
        for node in range(grown):
            expected = last_logits(p_model, torch.cat([accepted, tokens[tree.path(node)]]))
            torch.testing.assert_close(logits[node], expected, rtol=0, atol=ATOL)
        newly_accepted = torch.cat([tokens[tree.path(node_draw % tree.num_nodes)], random_tokens(generator, extra)])
        lm.commit(newly_accepted)
        accepted = torch.cat([accepted, newly_accepted])
        assert lm.prefix_len + len(lm._pending) == len(accepted)
        root = int(random_tokens(generator, 1))
    final = lm.grow(torch.tensor([root]), torch.tensor([-1]))[0]
    expected = last_logits(p_model, torch.cat([accepted, torch.tensor([root])]))
    torch.testing.assert_close(final, expected, rtol=0, atol=ATOL)


def test_commit_not_matching_the_tree_feeds_everything_next_time(tiny_models):
    p_model, _ = tiny_models
    prompt = torch.tensor([1, 2, 3])
    lm = TreeLM(p_model)
    lm.prefill(prompt)
    lm.grow(torch.tensor([3, 4, 5]), torch.tensor([-1, 0, 0]))
    lm.commit(torch.tensor([6, 7]))  # not the root's token: nothing of the tree is kept
    assert lm.tree_size == 0 and lm.prefix_len == 2
    logits = lm.grow(torch.tensor([0]), torch.tensor([-1]))[0]
    torch.testing.assert_close(logits, last_logits(p_model, torch.tensor([1, 2, 6, 7, 0])), rtol=0, atol=ATOL)


def test_duplicate_siblings_commit(tiny_models):
    """i.i.d. drafting yields equal siblings; either copy's entries serve the accepted path."""
    p_model, _ = tiny_models
    lm = TreeLM(p_model)
    lm.prefill(torch.tensor([1, 2]))
    lm.grow(torch.tensor([2, 5, 5, 6]), torch.tensor([-1, 0, 0, 2]))
    lm.commit(torch.tensor([2, 5, 6]))
    assert lm.prefix_len == 4 and len(lm._pending) == 0
    logits = lm.grow(torch.tensor([7]), torch.tensor([-1]))[0]
    torch.testing.assert_close(logits, last_logits(p_model, torch.tensor([1, 2, 5, 6, 7])), rtol=0, atol=ATOL)


def test_single_token_prompt(tiny_models):
    p_model, _ = tiny_models
    lm = TreeLM(p_model)
    lm.prefill(torch.tensor([4]))
    assert lm.prefix_len == 0
    logits = lm.grow(torch.tensor([4, 1]), torch.tensor([-1, 0]))
    torch.testing.assert_close(logits[1], last_logits(p_model, torch.tensor([4, 1])), rtol=0, atol=ATOL)


def test_invalid_parents_rejected(tiny_models):
    lm = TreeLM(tiny_models[0])
    lm.prefill(torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="node 0"):
        lm.grow(torch.tensor([2, 3]), torch.tensor([-1, -1]))
    with pytest.raises(ValueError, match="node 0"):
        lm.grow(torch.tensor([2]), torch.tensor([0]))
    with pytest.raises(ValueError, match="non-empty"):
        lm.prefill(torch.tensor([], dtype=torch.long))
