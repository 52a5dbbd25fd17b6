"""Bad input gets a ValueError that names the argument and the problem, at every public entry point."""

from __future__ import annotations

import numpy as np
import pytest

from resispec import get_verifier
from resispec.audit import exact_law, pit_audit, sample_audit
from resispec.bounds import optimal_acceptance, optimal_acceptance_lp, sequential_optimum_lp
from resispec.verifiers.resispec.plan import schedule

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
    ("abc", "real numbers"),
    (["0.4", "0.3", "0.2", "0.1"], "real numbers"),
    ([True, False, False, False], "real numbers"),
    ([True, 0.0, 0.0, 0.0], "real numbers"),
    (np.array([0.4 + 0.1j, 0.3, 0.2, 0.1]), "real numbers"),
    ([[0.5, 0.5], [0.5]], "not an array of numbers"),
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


@pytest.mark.parametrize("k, message", [(0, ">= 1"), (-3, ">= 1"), (2.0, "integer"), (True, "integer"),
                                        ("2", "integer")])
def test_bad_k(k, message):
    for call in (lambda: get_verifier("rrs").acceptance(P, Q, k), lambda: schedule(P, Q, k),
                 lambda: optimal_acceptance(P, Q, k),
                 lambda: get_verifier("rrs").draft(Q, k, np.random.default_rng(0))):
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


def test_float32_softmax_rows_are_accepted_with_the_float32_tolerance():
    from resispec.validation import FLOAT32_SUM_TOLERANCE, as_distribution

    rng = np.random.default_rng(0)
    for vocab in (49152, 151936):
        logits = (3.0 * rng.standard_normal(vocab)).astype(np.float32)
        row = np.exp(logits - logits.max())
        row = (row / row.sum()).astype(np.float32)
        assert abs(as_distribution(row, "p").sum() - 1.0) < 1e-15
    with pytest.raises(ValueError, match=f"tolerance {FLOAT32_SUM_TOLERANCE:g}"):
        as_distribution(np.array([0.5, 0.5002], dtype=np.float32), "p")
    with pytest.raises(ValueError, match="tolerance 1e-06"):
        as_distribution(np.array([0.5, 0.50001]), "p")


def test_rng_must_be_a_generator():
    with pytest.raises(ValueError, match="rng: expected a numpy.random.Generator"):
        get_verifier("rrs").draft(Q, 2, None)
    with pytest.raises(ValueError, match="rng"):
        get_verifier("rrs").verify_rng(P, Q, [0, 1], 0)


@pytest.mark.parametrize("token, u, message", [(-1, 0.5, "token"), (4, 0.5, "token"), (1.0, 0.5, "token"),
                                               (1, 2.0, "u:"), (1, -0.1, "u:"), (1, float("nan"), "u:")])
def test_randomized_pit_rejects_bad_tokens_and_uniforms(token, u, message):
    from resispec.audit.pit import randomized_pit

    with pytest.raises(ValueError, match=message):
        randomized_pit(P, token, u)


def test_size_limits_are_refused_at_once_naming_the_limit():
    import time

    from resispec.limits import MAX_CANDIDATES, SEQUENTIAL_LP_MAX_VARIABLES

    start = time.perf_counter()
    with pytest.raises(ValueError, match=f"limit {MAX_CANDIDATES}"):
        get_verifier("pooled").bind([0.4, 0.3, 0.3], [0.6, 0.3, 0.1], 10**13)
    with pytest.raises(ValueError, match=f"limit {MAX_CANDIDATES}"):
        optimal_acceptance(P, Q, 9000)
    big = np.full(100_000, 1e-5)
    with pytest.raises(ValueError, match=f"limit {SEQUENTIAL_LP_MAX_VARIABLES}"):
        sequential_optimum_lp(big, big, 2)
    with pytest.raises(ValueError, match="max_tuples"):
        exact_law("rrs", P, Q, 2, max_tuples=float("nan"))
    assert time.perf_counter() - start < 5.0


def test_wor_optimum_at_k_171_has_no_factorial_overflow():
    rng = np.random.default_rng(1)
    p, q = rng.dirichlet(np.ones(1000)), rng.dirichlet(np.ones(1000))
    value = optimal_acceptance(p, q, 171, "wor")
    assert 0.0 < value <= 1.0
