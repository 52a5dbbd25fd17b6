"""Every exact verifier reproduces p exactly, for each drafting rule; the controls do not."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from resispec import VERIFIERS, get_verifier
from resispec.audit import EXACT_TOLERANCE, exact_law
from tests.strategies import instances

EXACT = [name for name, cls in VERIFIERS.items() if cls.claims_exact]
CONTROLS = [name for name, cls in VERIFIERS.items() if not cls.claims_exact]


def _usable(verifier, q: np.ndarray, k: int) -> bool:
    limit = verifier.scheme.max_candidates(q)
    return (verifier.max_k is None or k <= verifier.max_k) and (limit is None or k <= limit)


@given(instances())
def test_exact_verifiers_emit_p(instance):
    p, q, k = instance
    for name in EXACT:
        verifier = get_verifier(name)
        kk = min(k, verifier.max_k or k)
        if not _usable(verifier, q, kk):
            continue
        law = exact_law(verifier, p, q, kk)
        assert law.max_error <= EXACT_TOLERANCE, (name, p, q, kk, law.law)
        assert law.law.sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("drafting", ["iid", "wor", "topk"])
def test_each_drafting_rule_has_an_exact_verifier(drafting):
    assert any(VERIFIERS[name].drafting == drafting for name in EXACT)


def test_published_rule_on_the_counterexample():
    law = exact_law("resispec_paper", [0.4, 0.3, 0.3], [0.6, 0.3, 0.1], 1)
    np.testing.assert_allclose(law.law, [0.4, 0.48, 0.12], atol=1e-15)
    assert law.max_error == pytest.approx(0.18)


@pytest.mark.parametrize("name", CONTROLS)
def test_every_control_is_biased_on_some_suite_pair(name):
    from resispec.suite import get_suite

    worst = max(exact_law(name, pair.p, pair.q, 4).tv for pair in get_suite()
                if _usable(get_verifier(name), pair.q, 4))
    assert worst > 0.05
