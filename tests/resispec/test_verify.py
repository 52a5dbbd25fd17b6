"""verify agrees with conditional_law and with draft + verify; the randomness convention holds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from resispec import VERIFIERS, get_verifier
from resispec.suite import get_suite

ALL = list(VERIFIERS)


def _pairs():
    by_name = {pair.name: pair for pair in get_suite()}
    return [by_name[name] for name in ("dirichlet-1", "zeros-in-p", "llm-like", "counterexample")]


@pytest.mark.parametrize("name", ALL)
def test_verify_samples_follow_conditional_law(name):
    """For fixed candidates, verify with fresh uniforms follows conditional_law (chi-square; the 3000
    verifications as rows of ``verify_many``, which decides as ``verify``, tests/resispec/test_verify_many.py)."""
    verifier = get_verifier(name)
    rng = np.random.default_rng(7)
    for pair in _pairs():
        k = 1 if verifier.max_k == 1 else min(3, verifier.scheme.max_candidates(pair.q) or 3)
        bound = verifier.bind(pair.p, pair.q, k)
        candidates = bound.draft(rng)
        law = bound.conditional_law(candidates)
        tokens, index = bound.verify_many(np.tile(candidates, (3000, 1)),
                                          rng.random((3000, verifier.uniforms_needed(k))))
        assert ((index == -1) | (candidates[index] == tokens)).all()
        counts = np.bincount(tokens, minlength=pair.p.size)
        live = law > 0
        assert counts[~live].sum() == 0, (name, pair.name)
        if live.sum() > 1:
            assert stats.chisquare(counts[live], law[live] * counts.sum()).pvalue > 1e-4, (name, pair.name)


@pytest.mark.parametrize("name", ALL)
def test_uniform_convention(name):
    """Sequential verifiers: u[i] decides candidate i, so all-zero uniforms accept the first candidate
    with a_1 > 0; u = 1-eps everywhere rejects every candidate with a_i < 1 and draws the residual at
    its upper end. Every verifier takes ``uniforms_needed(k)`` of them (pooled: see its layout)."""
    verifier = get_verifier(name)
    p, q = np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.4, 0.3, 0.2, 0.1])
    k = 1 if verifier.max_k == 1 else 2
    candidates = verifier.draft(q, k, np.random.default_rng(0))
    bound = verifier.bind(p, q, k)
    token, index = bound.verify(candidates, np.zeros(verifier.uniforms_needed(k)))
    assert index >= 0 and token == candidates[index]
    law = bound.conditional_law(candidates)
    token, index = bound.verify(candidates, np.full(verifier.uniforms_needed(k), np.nextafter(1.0, 0.0)))
    assert law[token] > 0


def test_draft_then_verify_matches_p_for_resispec():
    pair = get_suite()[2]
    verifier = get_verifier("resispec")
    rng = np.random.default_rng(1)
    counts = np.zeros(pair.p.size)
    for _ in range(5000):
        token, _ = verifier.verify_rng(pair.p, pair.q, verifier.draft(pair.q, 3, rng), rng)
        counts[token] += 1
    assert stats.chisquare(counts, pair.p * counts.sum()).pvalue > 1e-4


def test_draft_probability_matches_draft_frequencies():
    q = np.array([0.5, 0.3, 0.15, 0.05])
    rng = np.random.default_rng(2)
    for name in ("rrs", "rrs_wor", "topk"):
        verifier = get_verifier(name)
        draws = [tuple(verifier.draft(q, 2, rng)) for _ in range(6000)]
        tuples, counts = np.unique(np.array(draws), axis=0, return_counts=True)
        expected = np.array([verifier.draft_probability(q, t) for t in tuples])
        assert sum(prob for _, prob in verifier.scheme.tuples(q, 2)) == pytest.approx(1.0, abs=1e-12)
        assert expected.sum() == pytest.approx(1.0, abs=1e-12)
        if len(counts) > 1:
            assert stats.chisquare(counts, expected * counts.sum()).pvalue > 1e-4, name
