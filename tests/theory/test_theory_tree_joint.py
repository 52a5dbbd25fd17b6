"""The flat joint enumeration of a tree round: its parts are laws, it reproduces the target's
sequential law for the engine's drafting, and it sees a biased node verifier and a broken sharing."""

from __future__ import annotations

from fractions import Fraction

import pytest

from resispec.theory.sequence.tree import BIASED_RULE, ENGINE_SCHEMES, NODE_RULES, Model
from resispec.theory.sequence.tree_joint import (
    SCHEMES,
    SHARED_BY_LEVEL,
    SHARING,
    decision_law,
    drafted_trees,
    round_law,
)

MODEL = Model(3, 2, seed=5)


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@pytest.mark.parametrize("sharing", sorted(SHARING))
def test_drafted_trees_form_a_law(scheme: str, sharing: str) -> None:
    trees = list(drafted_trees(MODEL, SCHEMES[scheme], 2, SHARING[sharing]))
    assert sum(w for _, w in trees) == 1
    assert all(len(tree) == 1 + 2 for tree, _ in trees)  # the root and its two children have children


def test_sharing_by_path_merges_equal_siblings() -> None:
    per_node = list(drafted_trees(MODEL, SCHEMES["iid"], 2, SHARING["per node"]))
    per_path = list(drafted_trees(MODEL, SCHEMES["iid"], 2, SHARING["per path"]))
    assert len(per_node) == 9**3
    assert len(per_path) == 9**3 - 3 * (9**2 - 9)  # a duplicated root pair draws one subtree


def test_decision_law_is_a_law() -> None:
    for name, (rule, scheme) in ENGINE_SCHEMES.items():
        node = rule(MODEL.p[()], MODEL.q[()], 2)
        for children in SCHEMES[scheme](MODEL.q[()], 2):
            assert sum(decision_law(node, children).values()) == Fraction(1), name


def test_round_law_is_the_target_for_the_engine_drafting() -> None:
    target = MODEL.target((), 3)
    for name, (rule, scheme) in ENGINE_SCHEMES.items():
        for sharing in SHARING.values():
            assert round_law(MODEL, rule, SCHEMES[scheme], 2, sharing) == target, name


def test_round_law_sees_a_biased_node_and_a_broken_sharing() -> None:
    target = MODEL.target((), 3)
    assert round_law(MODEL, BIASED_RULE, SCHEMES["iid"], 2) != target
    assert round_law(MODEL, NODE_RULES["rrs"], SCHEMES["iid"], 2, SHARED_BY_LEVEL) != target
