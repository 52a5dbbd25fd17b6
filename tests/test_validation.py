"""Bad input gets a ValueError that names the argument and the problem, at every public entry point."""

from __future__ import annotations

import numpy as np
import pytest

from resispec import get_verifier
from resispec.audit import exact_law, pit_audit, sample_audit
from resispec.bounds import optimal_acceptance, optimal_acceptance_lp, sequential_optimum_lp
from resispec.shaping import schedule

P = np.array([0.4, 0.3, 0.2, 0.1])
Q = np.array([0.1, 0.2, 0.3, 0.4])

BAD_DISTRIBUTIONS = [
    (np.array([0.5, np.nan, 0.25, 0.25]), "NaN or inf"),
    (np.array([0.5, np.inf, 0.25, 0.25]), "NaN or inf"),
    (np.array([0.6, -0.1, 0.25, 0.25]), "negative"),
    (np.array([0.5, 0.3, 0.2, 0.1]), "sums to"),
    (np.array([[0.5, 0.5], [0.0, 0.0]]), "1-D"),
    (np.array([]), "1-D"),
    (np.array([0.5, 0.3, 0.2]), "vocabulary"),
    ("abc", "not an array of numbers"),
]

ENTRY_POINTS = {
    "verify": lambda p, q: get_verifier("resispec").verify(p, q, [0, 1], [0.5, 0.5, 0.5]),
    "verify_rng": lambda p, q: get_verifier("rrs").verify_rng(p, q, [0, 1], np.random.default_rng(0)),
    "conditional_law": lambda p, q: get_verifier("spectr").conditional_law(p, q, [0, 1]),
    "acceptance": lambda p, q: get_verifier("rrs_wor").acceptance(p, q, 2),
    "bind": lambda p, q: get_verifier("topk").bind(p, q, 2),
    "schedule": lambda p, q: schedule(p, q, 2),
    "optimal_acceptance": lambda p, q: optimal_acceptance(p, q, 2),
    "optimal_acceptance_lp": lambda p, q: optimal_acceptance_lp(p, q, 2),
    "sequential_optimum_lp": lambda p, q: sequential_optimum_lp(p, q, 2),
    "exact_law": lambda p, q: exact_law("resispec", p, q, 2),
    "sample_audit": lambda p, q: sample_audit("rrs", p, q, 2, n=10),
}


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@pytest.mark.parametrize("bad, message", BAD_DISTRIBUTIONS)
@pytest.mark.parametrize("which", ["p", "q"])
def test_bad_distributions_are_rejected(entry, bad, message, which):
    p, q = (bad, Q) if which == "p" else (P, bad)
    with pytest.raises(ValueError, match=message) as error:
        ENTRY_POINTS[entry](p, q)
    if message != "vocabulary":
        assert str(error.value).startswith("p (target)" if which == "p" else "q (draft)")


def test_sum_tolerance_is_stated_and_small_errors_are_renormalised():
    law = get_verifier("rrs").conditional_law(P * (1 + 1e-9), Q, [0])
    assert law.sum() == pytest.approx(1.0, abs=1e-15)
    with pytest.raises(ValueError, match="tolerance 1e-06"):
        schedule(P * 1.01, Q, 2)


@pytest.mark.parametrize("k, message", [(0, ">= 1"), (-3, ">= 1"), (2.0, "integer"), (True, "integer"), ("2", "integer")])
def test_bad_k(k, message):
    for call in (lambda: get_verifier("rrs").acceptance(P, Q, k), lambda: schedule(P, Q, k),
                 lambda: optimal_acceptance(P, Q, k), lambda: get_verifier("rrs").draft(Q, k, np.random.default_rng(0))):
        with pytest.raises(ValueError, match=message):
            call()


def test_k_limits_of_each_drafting_rule():
    sparse_q = np.array([0.5, 0.5, 0.0, 0.0])
    with pytest.raises(ValueError, match="takes at most 1"):
        get_verifier("sps").acceptance(P, Q, 2)
    for name in ("rrs_wor", "topk"):
        with pytest.raises(ValueError, match="support"):
            get_verifier(name).acceptance(P, sparse_q, 3)
    assert get_verifier("rrs").acceptance(P, sparse_q, 3) > 0


@pytest.mark.parametrize("candidates, message", [
    ([0, 4], "outside the vocabulary"),
    ([-1, 0], "outside the vocabulary"),
    ([0.0, 1.0], "integers"),
    ([[0, 1]], "1-D"),
    ([], "1-D"),
])
def test_bad_candidates(candidates, message):
    with pytest.raises(ValueError, match=message):
        get_verifier("rrs").verify(P, Q, candidates, [0.5, 0.5, 0.5])


def test_candidates_the_draft_could_not_have_produced():
    q = np.array([0.5, 0.5, 0.0, 0.0])
    with pytest.raises(ValueError, match="q = 0"):
        get_verifier("rrs").verify(P, q, [0, 2], [0.1, 0.1, 0.1])
    with pytest.raises(ValueError, match="more than once"):
        get_verifier("rrs_wor").verify(P, Q, [1, 1], [0.1, 0.1, 0.1])
    with pytest.raises(ValueError, match="top-2"):
        get_verifier("topk").verify(P, Q, [2, 3], [0.1, 0.1, 0.1])
    with pytest.raises(ValueError, match="expected 2 candidates"):
        get_verifier("rrs").bind(P, Q, 2).verify([0, 1, 2], [0.1, 0.1, 0.1])


@pytest.mark.parametrize("u, message", [
    ([0.5, 0.5], "expected 3 uniforms"),
    ([0.5, 0.5, 0.5, 0.5], "expected 3 uniforms"),
    ([0.5, 1.0, 0.5], "uniform 1"),
    ([0.5, -0.1, 0.5], "uniform 1"),
    ([0.5, 0.5, np.nan], "uniform 2"),
])
def test_bad_uniforms(u, message):
    with pytest.raises(ValueError, match=message):
        get_verifier("resispec").verify(P, Q, [0, 1], u)


def test_bad_audit_arguments():
    with pytest.raises(ValueError, match="alpha"):
        sample_audit("rrs", P, Q, 2, n=10, alpha=1.5)
    with pytest.raises(ValueError, match="n: the number of samples"):
        sample_audit("rrs", P, Q, 2, n=0)
    with pytest.raises(ValueError, match="unknown verifier"):
        exact_law("nope", P, Q, 2)
    with pytest.raises(ValueError, match="max_tuples"):
        exact_law("rrs", np.full(40, 1 / 40), np.full(40, 1 / 40), 4)
    with pytest.raises(ValueError, match="entry 1"):
        pit_audit([0.5, 1.5, 0.2])
    with pytest.raises(ValueError, match="drafting"):
        optimal_acceptance(P, Q, 2, drafting="beam")
