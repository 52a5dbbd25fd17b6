"""Bad input to the sequence-level laws gets a named ``ValueError``, never a silent truncation or a numpy
message, and the round audit refuses sizes past its limit before allocating (issue 31)."""

from __future__ import annotations

import numpy as np
import pytest

from resispec.audit.round_law import exact_round_law
from resispec.limits import MAX_ROUND_SEQUENCES
from resispec.sequence import get_round_verifier, round_tree

UNIFORM3 = lambda prefix: np.full(3, 1 / 3)  # noqa: E731


@pytest.mark.parametrize("parents, tokens, message", [
    ([-1, 0.7, 0.7], [0, 1, 2], "parents: expected integer"),
    ([-1, 0, 0], [0, 1.5, 2], "tokens: expected integer"),
    ([-1, 0, 0], [False, True, True], "tokens: expected integer"),
])
def test_round_tree_refuses_what_is_not_an_integer(parents, tokens, message):
    with pytest.raises(ValueError, match=message):
        round_tree(parents, tokens, 3)
    assert round_tree([-1.0, 0.0, 0.0], [0, 1, 2], 3).parents.tolist() == [-1, 0, 0]  # integral floats are fine


@pytest.mark.parametrize("name", ["block", "traversal", "traversal_wor", "gbv"])
def test_a_tree_token_outside_ps_vocabulary_is_named(name):
    tree = round_tree([-1, 0], [0, 4], 5)
    p, q = np.full((2, 3), 1 / 3), np.full((1, 3), 1 / 3)
    with pytest.raises(ValueError, match=r"tokens: node 1's token 4 is outside p's vocabulary \[0, 3\)"):
        get_round_verifier(name).law(tree, p, q)


def test_exact_round_law_refuses_an_empty_tree_and_a_changing_vocabulary():
    with pytest.raises(ValueError, match="branching: expected a non-empty sequence"):
        exact_round_law("block", UNIFORM3, UNIFORM3, 3, [])
    growing = lambda prefix: np.full(3 + len(prefix), 1 / (3 + len(prefix)))  # noqa: E731
    with pytest.raises(ValueError, match=r"target: the distribution at prefix \(0,\) has 4 entries, not vocab_size 3"):
        exact_round_law("block", growing, UNIFORM3, 3, [1, 1])


def test_exact_round_law_refuses_past_its_sequence_limit_before_allocating():
    uniform = lambda prefix: np.full(1000, 1e-3)  # noqa: E731
    with pytest.raises(ValueError, match="MAX_ROUND_SEQUENCES"):
        exact_round_law("block", uniform, uniform, 1000, [1, 1, 1])  # 10^12 sequences: 7 TiB before
    vocab = int(round(MAX_ROUND_SEQUENCES ** (1 / 3)))  # just under at depth 2: 64^3
    assert vocab**3 <= MAX_ROUND_SEQUENCES
    flat = lambda prefix: np.full(vocab, 1 / vocab)  # noqa: E731
    assert exact_round_law("block", flat, flat, vocab, [1, 1]).exact


def test_a_without_replacement_tree_wider_than_the_draft_support_is_refused_never_a_wrong_law():
    target, draft = (lambda prefix: np.array([0.6, 0.4])), (lambda prefix: np.array([0.3, 0.7]))
    with pytest.raises(ValueError, match=r"branching: wor drafting of 3 children at prefix \(\) needs"):
        exact_round_law("traversal_wor", target, draft, 2, (3, 1))
    wide = (lambda prefix: np.array([0.5, 0.3, 0.2])), (lambda prefix: np.array([0.2, 0.3, 0.5]))
    assert exact_round_law("traversal_wor", *wide, 3, (3, 1)).max_error < 1e-12  # V = 3 serves three children
