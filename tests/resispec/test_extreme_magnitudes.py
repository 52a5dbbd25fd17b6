"""Every exact verifier on extreme magnitudes (masses from 1e-320 to 1, zeros): the exact law is
finite, sums to 1 and equals p within 1e-12, and no token with p = 0 is ever emitted, neither in a
conditional law nor in a sampled decision. The verifiers come from the registry, so a new exact
verifier is covered as soon as it is registered."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings

import resispec
from resispec.audit import exact_law
from resispec.audit.exact import EXACT_TOLERANCE
from tests.extreme import extreme_instances

EXACT = [name for name, cls in resispec.VERIFIERS.items() if cls.claims_exact]
DRAWS = 16
"""Sampled decisions per instance (uniforms from a seeded generator, plus the extremes 0 and 1 - ulp)."""


def bound_or_skip(name: str, p: np.ndarray, q: np.ndarray, k: int):
    """The verifier bound to (p, q, k); the example is discarded where k does not fit the verifier
    (sps takes one candidate; WOR and top-k drafting need k tokens in q's support)."""
    verifier = resispec.get_verifier(name)
    try:
        return verifier.bind(p, q, k)
    except ValueError as error:
        assume("k:" not in str(error))
        raise


@pytest.mark.parametrize("name", EXACT)
@settings(max_examples=60)
@given(instance=extreme_instances())
def test_exact_law_is_finite_and_equals_p(name, instance):
    p, q, k = instance
    bound_or_skip(name, p, q, k)
    result = exact_law(name, p, q, k)
    assert np.isfinite(result.law).all(), (name, p, q, k, result.law)
    assert abs(result.law.sum() - 1.0) <= EXACT_TOLERANCE
    assert result.max_error <= EXACT_TOLERANCE, (name, p, q, k, result.law)
    assert np.all(result.law[p == 0] == 0.0)


@pytest.mark.parametrize("name", EXACT)
@settings(max_examples=60)
@given(instance=extreme_instances())
def test_no_token_outside_the_support_of_p_is_emitted(name, instance):
    p, q, k = instance
    bound = bound_or_skip(name, p, q, k)
    rng = np.random.default_rng(0)
    needed = bound.verifier.uniforms_needed(k)
    extremes = [np.zeros(needed), np.full(needed, np.nextafter(1.0, 0.0))]
    for draw in range(DRAWS + len(extremes)):
        candidates = bound.draft(rng)
        u = extremes[draw - DRAWS] if draw >= DRAWS else rng.random(needed)
        token, _ = bound.verify(candidates, u)
        assert p[token] > 0, (name, p, q, candidates, u, token)
        law = bound.conditional_law(candidates)
        assert np.isfinite(law).all() and np.all(law[p == 0] == 0.0), (name, p, q, candidates, law)


def test_the_reported_cases():
    """The probe's reproductions: resispec's 0/0 ratio, and the p = 0 token every exact verifier emitted."""
    law = resispec.get_verifier("resispec").conditional_law([1e-228, 1.0, 1e-140], [1e-267, 1.0, 1e-77], [2, 0])
    assert np.isfinite(law).all() and law.sum() == pytest.approx(1.0)
    result = exact_law("resispec", [1e-300, 1.0, 1e-130], [1e-100, 1.0, 1e-170], 3)
    assert np.isfinite(result.law).all() and result.max_error <= EXACT_TOLERANCE
    p, q = [0.0, 0.5, 0.5], [1e-200, 0.5, 0.5]
    for name in EXACT:
        verifier = resispec.get_verifier(name)
        k = 1 if verifier.max_k == 1 else 2
        if verifier.drafting == "topk":
            continue  # top-k drafting never proposes token 0 here
        candidates = [0] if k == 1 else ([0, 1] if verifier.drafting == "wor" else [0, 0])
        for u in (0.0, 0.3, 0.999):
            token, _ = verifier.verify(p, q, candidates, [u] * verifier.uniforms_needed(k))
            assert token != 0, (name, u)
