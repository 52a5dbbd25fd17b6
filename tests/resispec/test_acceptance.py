"""Acceptance: closed forms agree with enumeration; resispec sits between rrs/spectr and alpha*."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings

from resispec import VERIFIERS, get_verifier
from resispec.audit import exact_law
from resispec.bounds import optimal_acceptance, optimal_acceptance_lp, sequential_optimum_lp
from resispec.verifiers.resispec.plan import schedule
from tests.strategies import instances

LP_TOLERANCE = 1e-7


@given(instances(max_v=6))
@settings(max_examples=100)
def test_acceptance_matches_enumeration(instance):
    p, q, k = instance
    for name, cls in VERIFIERS.items():
        verifier = cls()
        kk = min(k, verifier.max_k or k)
        limit = verifier.scheme.max_candidates(q)
        if limit is not None and kk > limit:
            continue
        assert verifier.acceptance(p, q, kk) == pytest.approx(exact_law(verifier, p, q, kk).acceptance, abs=1e-12), name


def brute_force_optimum(p: np.ndarray, q: np.ndarray, k: int) -> float:
    """``min over every token subset H of p(H) + 1 - q(H)^k``."""
    tokens = range(p.size)
    return min(p[list(h)].sum() + 1.0 - q[list(h)].sum() ** k
               for size in range(p.size + 1) for h in itertools.combinations(tokens, size))


@given(instances(max_v=6))
def test_resispec_is_the_sequential_optimum_and_below_alpha_star(instance):
    p, q, k = instance
    resispec = get_verifier("resispec").acceptance(p, q, k)
    assert resispec >= get_verifier("rrs").acceptance(p, q, k) - 1e-12
    assert resispec >= get_verifier("spectr").acceptance(p, q, k) - 1e-12
    assert resispec == pytest.approx(sequential_optimum_lp(p, q, k), abs=LP_TOLERANCE)
    assert resispec <= optimal_acceptance(p, q, k) + 1e-12
    assert schedule(p, q, k).acceptance == pytest.approx(resispec, abs=1e-15)


@given(instances(max_v=6))
def test_iid_optimum_closed_form(instance):
    p, q, k = instance
    alpha_star = optimal_acceptance(p, q, k)
    assert alpha_star == pytest.approx(brute_force_optimum(p, q, k), abs=1e-12)
    assert alpha_star == pytest.approx(optimal_acceptance_lp(p, q, k, "iid"), abs=LP_TOLERANCE)


@given(instances(max_v=5, max_k=3))
@settings(max_examples=60)
def test_wor_lp_bounds_rrs_wor_and_topk_optimum(instance):
    p, q, k = instance
    if k > np.count_nonzero(q):
        return
    wor_bound = optimal_acceptance_lp(p, q, k, "wor")
    assert get_verifier("rrs_wor").acceptance(p, q, k) <= wor_bound + LP_TOLERANCE
    assert optimal_acceptance(p, q, k, "topk") == pytest.approx(optimal_acceptance_lp(p, q, k, "topk"),
                                                                abs=LP_TOLERANCE)
    assert get_verifier("topk").acceptance(p, q, k) == pytest.approx(optimal_acceptance(p, q, k, "topk"), abs=1e-12)


def test_the_known_gap_between_sequential_and_joint_optimum():
    """resispec is optimal among sequential verifiers, not among all: a pair where alpha* is larger."""
    rng = np.random.default_rng(3)
    gaps = []
    for _ in range(200):
        p, q = rng.dirichlet(np.ones(5) * 0.5), rng.dirichlet(np.ones(5) * 0.5)
        gaps.append(optimal_acceptance(p, q, 3) - get_verifier("resispec").acceptance(p, q, 3))
    assert min(gaps) >= -1e-12 and max(gaps) > 1e-3
