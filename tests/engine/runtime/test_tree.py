"""CandidateTree structure, ancestor relation and the additive mask."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from resispec.engine.runtime.tree import CandidateTree, additive_mask, ancestor_matrix, node_depths

branchings = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


def parents_from_draws(draws: list[int]) -> list[int]:
    """A parent array where node i's parent is draws[i] mod i (a valid tree in index order)."""
    return [-1] + [draws[i] % i for i in range(1, len(draws))]


def test_4_2_2_1_shape():
    tree = CandidateTree.from_branching((4, 2, 2, 1))
    assert tree.num_nodes == 1 + 4 + 8 + 16 + 16
    assert [tree.level(d) for d in range(5)] == [slice(0, 1), slice(1, 5), slice(5, 13), slice(13, 29), slice(29, 45)]
    assert tree.parents[1:5].tolist() == [0, 0, 0, 0]
    assert tree.parents[5:13].tolist() == [1, 1, 2, 2, 3, 3, 4, 4]
    assert tree.path(44) == [0, 4, 12, 28, 44]


@given(branchings)
def test_levels_depths_and_paths(branching):
    tree = CandidateTree.from_branching(branching)
    assert tree.num_nodes == sum(math.prod(branching[:d]) for d in range(len(branching) + 1))
    for depth in range(tree.depth + 1):
        level = tree.level(depth)
        assert (tree.depths[level] == depth).all()
        assert level.stop - level.start == math.prod(branching[:depth])
    for node in range(tree.num_nodes):
        path = tree.path(node)
        assert path[0] == 0 and path[-1] == node and len(path) == tree.depths[node] + 1
        assert all(tree.parents[b] == a for a, b in zip(path, path[1:]))
    for node in range(tree.num_nodes):  # children(node): contiguous, branching[depth] of them (none at leaves)
        children = tree.children(node)
        assert list(range(children.start, children.stop)) == (tree.parents == node).nonzero().flatten().tolist()
        depth = int(tree.depths[node])
        assert children.stop - children.start == (branching[depth] if depth < tree.depth else 0)


@settings(max_examples=50)
@given(st.lists(st.integers(0, 100), min_size=1, max_size=30))
def test_ancestor_matrix_is_path_membership(draws):
    parents = parents_from_draws(draws)
    ancestors = ancestor_matrix(parents)
    for node in range(len(parents)):
        path, walk = set(), node
        while walk >= 0:
            path.add(walk)
            walk = parents[walk]
        assert set(torch.nonzero(ancestors[node]).flatten().tolist()) == path


def test_invalid_parents_rejected():
    with pytest.raises(ValueError, match=r"parents\[2\] = 2"):
        node_depths([-1, 0, 2])
    with pytest.raises(ValueError, match=">= 1"):
        CandidateTree.from_branching((2, 0))
    with pytest.raises(ValueError, match="MAX_TREE_NODES"):
        CandidateTree.from_branching((100, 100, 100))


def test_additive_mask_values():
    allowed = torch.tensor([[True, False], [True, True]])
    mask = additive_mask(allowed, torch.float32)
    assert mask.shape == (1, 1, 2, 2)
    assert mask[0, 0, 0, 0] == 0 and mask[0, 0, 0, 1] == torch.finfo(torch.float32).min
    assert (mask[0, 0, 1] == 0).all()
