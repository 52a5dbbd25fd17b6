"""verify_many and conditional_laws: n tuples as rows of one batched call, equal to verify and
conditional_law row for row; bad-input errors name the row."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from resispec import VERIFIERS, get_verifier
from resispec.suite import get_suite
from tests.extreme import extreme_instances

ALL = list(VERIFIERS)


def _ks(verifier, q: np.ndarray) -> list[int]:
    limit = verifier.scheme.max_candidates(q) or 4
    return [k for k in (1, 2, 4) if k <= limit and (verifier.max_k is None or k <= verifier.max_k)]


def _assert_rows_equal_single_calls(bound, rng: np.random.Generator, n: int) -> None:
    candidates = np.array([bound.draft(rng) for _ in range(n)])
    u = rng.random((n, bound.verifier.uniforms_needed(bound.k)))
    tokens, index = bound.verify_many(candidates, u)
    expected = np.array([bound.verify(row, uniforms) for row, uniforms in zip(candidates, u)])
    assert tokens.tolist() == expected[:, 0].tolist()
    assert index.tolist() == expected[:, 1].tolist()


def _assert_laws_equal_single_calls(bound, rng: np.random.Generator, n: int) -> None:
    candidates = np.array([bound.draft(rng) for _ in range(n)])
    laws, accepted = bound.conditional_laws(candidates)
    for row, law, acceptance in zip(candidates, laws, accepted):
        assert law.tolist() == bound.conditional_law(row).tolist()
        assert acceptance == bound.accept_probability(row)


@pytest.mark.parametrize("name", ALL)
def test_rows_decide_as_single_calls_on_every_suite_pair(name):
    """Every suite pair (zeros in p or q, one-hot, p == q, the counterexample ...), k = 1, 2, 4: decisions
    and conditional laws."""
    verifier = get_verifier(name)
    rng = np.random.default_rng(11)
    for pair in get_suite():
        for k in _ks(verifier, pair.q):
            bound = verifier.bind(pair.p, pair.q, k)
            _assert_rows_equal_single_calls(bound, rng, 200)
            _assert_laws_equal_single_calls(bound, rng, 20)


@pytest.mark.parametrize("name", ALL)
@settings(max_examples=25)
@given(instance=extreme_instances())
def test_rows_decide_as_single_calls_on_extreme_magnitudes(name, instance):
    p, q, k = instance
    verifier = get_verifier(name)
    if k not in _ks(verifier, q):
        return
    bound = verifier.bind(p, q, k)
    _assert_rows_equal_single_calls(bound, np.random.default_rng(5), 40)
    _assert_laws_equal_single_calls(bound, np.random.default_rng(6), 10)


def test_all_rejected_rows_draw_the_residual():
    """u = 1 - eps rejects every candidate with a_i < 1: those rows draw the final residual (index -1)."""
    bound = get_verifier("rrs").bind([0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1], 2)
    tokens, index = bound.verify_many(np.array([[0, 0], [0, 1]]), np.full((2, 3), np.nextafter(1.0, 0.0)))
    assert index.tolist() == [-1, -1] and tokens.tolist() == [3, 3]


@pytest.mark.parametrize(("candidates", "u", "message"), [
    (np.array([0, 1]), np.zeros((1, 3)), r"candidates: expected a non-empty \(n, 2\) array"),
    (np.zeros((3, 3), dtype=int), np.zeros((3, 3)), r"candidates: expected a non-empty \(n, 2\) array"),
    (np.zeros((2, 2)), np.zeros((2, 3)), "candidates: token ids must be integers"),
    (np.array([[0, 1], [0, 1], [0, 4]]), np.zeros((3, 3)),
     r"candidates: id 4 at position 1 is outside .* \(batch row 2\)"),
    (np.array([[0, 1], [3, 1]]), np.zeros((2, 3)), r"candidates: token 3 .* q = 0.* \(batch row 1\)"),
    (np.array([[0, 1]]), np.zeros((2, 3)), r"u: expected shape \(1, 3\)"),
    (np.array([[0, 1], [1, 0]]), np.array([[0.0, 0.5, 0.5], [0.1, 1.0, 0.2]]),
     r"u: uniform 1 is 1.0; every uniform must lie in \[0, 1\) \(batch row 1\)"),
    (np.array([[0, 1]]), np.array([[0.0, np.nan, 0.5]]), r"u: uniform 1 is nan; .* \(batch row 0\)"),
])
def test_bad_rows_are_named(candidates, u, message):
    bound = get_verifier("rrs").bind([0.25, 0.25, 0.25, 0.25], [0.5, 0.25, 0.25, 0.0], 2)
    with pytest.raises(ValueError, match=message):
        bound.verify_many(candidates, u)


def test_rows_a_drafting_scheme_cannot_produce_are_named():
    p = q = [0.4, 0.3, 0.2, 0.1]
    with pytest.raises(ValueError, match=r"token 2 appears more than once.* \(batch row 1\)"):
        get_verifier("rrs_wor").bind(p, q, 2).verify_many(np.array([[0, 1], [2, 2]]), np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"not the draft's top-2 tokens.* \(batch row 0\)"):
        get_verifier("topk").bind(p, q, 2).verify_many(np.array([[1, 0], [0, 1]]), np.zeros((2, 3)))


def test_draft_and_verify_is_the_stream_of_single_samples():
    """n draft + verify samples in one call equal n ``verify_rng(draft(rng), rng)`` calls from the same seed."""
    for name in ("rrs_wor", "pooled", "spectr", "topk"):
        bound = get_verifier(name).bind([0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1], 2)
        tokens, index = bound.draft_and_verify(50, np.random.default_rng(9))
        rng = np.random.default_rng(9)
        expected = [bound.verify_rng(bound.draft(rng), rng) for _ in range(50)]
        assert list(zip(tokens.tolist(), index.tolist())) == expected
