"""``single_candidate_is_sps``: the flag the engine's chain path relies on is true exactly where the law is sps's."""

from __future__ import annotations

import numpy as np
import pytest

from resispec import VERIFIERS, get_verifier


def _pairs(seed: int, count: int = 150):
    rng = np.random.default_rng(seed)
    for t in range(count):
        size = int(rng.integers(2, 7))
        p, q = rng.dirichlet(np.full(size, 0.5)), rng.dirichlet(np.full(size, 0.5))
        if t % 5 == 0:
            p[rng.integers(size)] = 0
        if t % 7 == 0:
            q[rng.integers(size)] = 0
        yield p / p.sum(), q / q.sum(), rng


@pytest.mark.parametrize("name", [n for n, cls in VERIFIERS.items() if cls.single_candidate_is_sps])
def test_flagged_verifiers_have_the_sps_law_with_one_candidate(name):
    verifier, sps = get_verifier(name), get_verifier("sps")
    for p, q, rng in _pairs(1):
        candidate = verifier.draft(q, 1, rng)
        np.testing.assert_allclose(verifier.conditional_law(p, q, candidate), sps.conditional_law(p, q, candidate),
                                   rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["topk", "resispec_paper", "ears"])
def test_the_flag_is_off_where_the_one_candidate_law_differs(name):
    verifier, sps = get_verifier(name), get_verifier("sps")
    assert not verifier.single_candidate_is_sps
    gaps = [np.abs(verifier.conditional_law(p, q, c) - sps.conditional_law(p, q, c)).max()
            for p, q, rng in _pairs(2) for c in [verifier.draft(q, 1, rng)]]
    assert max(gaps) > 0.05


def test_controls_never_carry_the_flag():
    assert not any(cls.single_candidate_is_sps for cls in VERIFIERS.values() if not cls.claims_exact)
