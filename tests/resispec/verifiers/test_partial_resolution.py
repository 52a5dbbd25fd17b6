"""partial_resolution: exact, reaches alpha* (= pooled's acceptance, = the subset-selection optimum), its pools
are pooled's, and its control without pools is caught."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from scipy import stats

from resispec import get_verifier
from resispec.benchmarks.verify_speed import llm_like_pair
from resispec.bounds import optimal_acceptance
from resispec.cli import main
from resispec.drafting import DRAFTING_SCHEMES
from resispec.formats.pairs import read_logged
from resispec.verifiers.partial_resolution import PartialResolution, PartialResolutionUnpooled
from resispec.verifiers.partial_resolution.plan import score_components
from resispec.verifiers.pooled import Pooled
from resispec.verifiers.pooled.plan import score_components as pooled_components
from tests.resispec.verifiers.test_pooled import CORNERS
from tests.strategies import instances

TOLERANCE = 1e-12
OPTIMUM_TOLERANCE = 1e-9
PARTIAL, POOLED, UNPOOLED = PartialResolution(), Pooled(), PartialResolutionUnpooled()
PAIRS = "/work/shared/data/smollm2_pairs.npz"


def subset_selection_optimum(p: np.ndarray, q: np.ndarray, k: int) -> float:
    """``min_H [p(H) + 1 - q(H)^k]`` over all ``2^V`` token sets (Hu et al. 2025's subset selection)."""
    sets = itertools.product([False, True], repeat=p.size)
    return min(p[list(H)].sum() + 1.0 - q[list(H)].sum() ** k for H in map(np.array, sets))


def enumerate_against_pooled(p: np.ndarray, q: np.ndarray, k: int):
    """``(bound, law, acceptance, selected, gap)`` over every i.i.d. tuple: the emitted law, acceptance, the
    selected token's law, and ``sum_tuples P(tuple) max |law - pooled's law|`` (the joint difference)."""
    bound, pooled = PARTIAL.bind(p, q, k), POOLED.bind(p, q, k)
    law, selected, acceptance, gap = np.zeros(p.size), np.zeros(p.size), 0.0, 0.0
    for candidates, probability in DRAFTING_SCHEMES["iid"].tuples(bound.q, k):
        candidates = np.array(candidates)
        conditional, accepted = PARTIAL._law(bound, candidates)
        law += probability * conditional
        acceptance += probability * accepted
        np.add.at(selected, candidates, probability * PARTIAL._row_selection_probabilities(
            bound.plan, candidates[None])[0])
        gap += probability * np.abs(conditional - POOLED._law(pooled, candidates)[0]).max()
    return bound, law, acceptance, selected, gap


def check_exact_and_optimal(p: np.ndarray, q: np.ndarray, k: int) -> None:
    bound, law, acceptance, selected, gap = enumerate_against_pooled(p, q, k)
    assert np.abs(law - bound.p).max() <= TOLERANCE, (p, q, k, law)
    assert np.abs(selected - bound.plan.selection_law[0]).max() <= TOLERANCE
    assert acceptance == pytest.approx(optimal_acceptance(bound.p, bound.q, k), abs=TOLERANCE)
    assert bound.acceptance() == pytest.approx(POOLED.bind(p, q, k).acceptance(), abs=OPTIMUM_TOLERANCE)
    if p.size <= 8:
        assert acceptance == pytest.approx(subset_selection_optimum(bound.p, bound.q, k), abs=OPTIMUM_TOLERANCE)
    assert gap <= TOLERANCE


@given(instances(max_v=6, max_k=4))
@settings(max_examples=150)
def test_exact_law_optimal_acceptance_and_pooled_laws(instance):
    """Every tuple: the law is p, the acceptance alpha* (ratio cut, pooled, every subset), the selection law t,
    and the conditional laws pooled's."""
    check_exact_and_optimal(*instance)


@pytest.mark.parametrize("name", CORNERS)
@pytest.mark.parametrize("k", [1, 2, 5])
def test_corner_cases(name, k):
    p, q = CORNERS[name]
    check_exact_and_optimal(p / p.sum(), q / q.sum(), k)


@pytest.mark.parametrize("k", [2, 4, 8])
def test_resolved_pools_are_pooleds_on_a_large_llm_like_pair(k):
    """At V = 4096 the pools resolved for drawn candidates are pooled's (ranks and probabilities), and with
    the same uniforms both verifiers decide the same tokens."""
    _, p, q = llm_like_pair(4096, np.random.default_rng(k))
    bound, pooled = PARTIAL.bind(p, q, k), POOLED.bind(p, q, k)
    rng = np.random.default_rng(7)
    candidates = np.stack([bound.draft(rng) for _ in range(40)])
    for row in candidates:
        ranks, reached = score_components(bound.plan, row[None])
        expected_ranks, expected = pooled_components(pooled.plan, row[None])
        for i in range(k):
            mine = ranks[0, i] < p.size
            theirs = expected_ranks[0, i] < p.size
            np.testing.assert_array_equal(ranks[0, i][mine], expected_ranks[0, i][theirs])
            probabilities = np.diff(reached[0, i], prepend=0.0)[mine]
            np.testing.assert_allclose(probabilities, expected[0, i][theirs], atol=1e-9)
    u = rng.random((candidates.shape[0], 2 * k + 2))
    same = [bound.verify(row, uniforms) == pooled.verify(row, uniforms) for row, uniforms in zip(candidates, u)]
    assert sum(same) >= len(same) - 1  # a uniform within rounding of a boundary may split them


def smollm2_rows(draft: str):
    """The logged SmolLM2 rows (V = 2049: the kept tokens and their tail as one token), renormalised."""
    p, q = read_logged(PAIRS).tailed(draft)
    return zip(p / p.sum(axis=1, keepdims=True), q / q.sum(axis=1, keepdims=True))


@pytest.mark.skipif(not Path(PAIRS).exists(), reason="the logged SmolLM2 rows are not here")
@pytest.mark.parametrize("draft", ["q", "q_weak"])
def test_acceptance_equals_pooleds_on_the_real_smollm2_rows(draft):
    worst = 0.0
    for p, q in smollm2_rows(draft):
        for k in (2, 4, 8):
            mine = PARTIAL.bind(p, q, k).acceptance()
            worst = max(worst, abs(mine - POOLED.bind(p, q, k).acceptance()), abs(mine - optimal_acceptance(p, q, k)))
    assert worst <= OPTIMUM_TOLERANCE


def test_decisions_follow_the_conditional_law_and_report_indices():
    p, q = np.array([0.05, 0.4, 0.1, 0.3, 0.15]), np.array([0.3, 0.1, 0.25, 0.1, 0.25])
    bound = PARTIAL.bind(p, q, 3)
    rng = np.random.default_rng(5)
    for candidates in (np.array([0, 2, 4]), np.array([0, 0, 2]), np.array([3, 1, 0])):
        law = bound.conditional_law(candidates)
        counts = np.zeros(p.size)
        for _ in range(4000):
            token, index = bound.verify_rng(candidates, rng)
            counts[token] += 1
            assert (index >= 0 and candidates[index] == token) or (index == -1 and token not in candidates)
        live = law > 0
        assert counts[~live].sum() == 0 and live.sum() > 1
        assert stats.chisquare(counts[live], law[live] * counts.sum()).pvalue > 1e-4


@pytest.mark.parametrize("u", [np.zeros(3), np.zeros(7), np.full(6, 1.0)])
def test_bad_uniforms_are_refused(u):
    with pytest.raises(ValueError, match="^u:"):
        PARTIAL.bind([0.5, 0.5], [0.3, 0.7], 2).verify([0, 1], u)


def test_control_without_pools_is_biased_and_sps_at_one_candidate():
    p, q = np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.4, 0.3, 0.2, 0.1])
    bound = UNPOOLED.bind(p, q, 2)
    laws = [(probability, UNPOOLED._law(bound, np.array(candidates)))
            for candidates, probability in DRAFTING_SCHEMES["iid"].tuples(bound.q, 2)]
    law = sum(probability * conditional for probability, (conditional, _) in laws)
    assert 0.5 * np.abs(law - p).sum() == pytest.approx(311 / 2550, abs=1e-12)  # theory: partial_resolution_unpooled
    acceptance = sum(probability * accepted for probability, (_, accepted) in laws)
    assert bound.acceptance() == pytest.approx(acceptance, abs=1e-12)  # its closed form, above alpha* = 0.79
    assert acceptance > optimal_acceptance(p, q, 2) + 0.07
    for token in range(4):
        np.testing.assert_allclose(UNPOOLED.conditional_law(p, q, [token]),
                                   get_verifier("sps").conditional_law(p, q, [token]), atol=1e-15)


def test_audit_passes_partial_resolution_at_the_optimum_and_flags_its_control(capsys):
    status = main(["audit", "--verifier", "partial_resolution", "--suite", "quick", "--samples", "1500", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 0 and report["passed"]
    for row in report["rows"]:
        assert row["verdict"] == "PASS" and row["max_exact_error"] <= TOLERANCE
        assert row["mean_ratio_to_iid_optimum"] == pytest.approx(1.0, abs=TOLERANCE)
    status = main(["audit", "--verifier", "partial_resolution_unpooled", "--suite", "quick", "--samples", "1500",
                   "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 0 and report["passed"]  # a control passes the audit run by being caught
    assert [row["verdict"] for row in report["rows"]] == ["caught", "caught"]
    assert min(row["max_exact_error"] for row in report["rows"]) > 0.1


def test_the_row_cost_benchmark_times_both_verifiers_at_equal_acceptance():
    """``bench_rows`` (not a timed test: it checks the record, not the speed)."""
    from resispec.benchmarks.partial_resolution_speed import bench_rows

    rng = np.random.default_rng(3)
    rows = [llm_like_pair(64, rng)[1:] for _ in range(3)]
    [record] = bench_rows(rows, ks=[3], seed=1)
    assert record.k == 3 and record.rows == 3 and record.max_acceptance_gap <= OPTIMUM_TOLERANCE
    assert min(record.pooled_row_ms, record.partial_row_ms) > 0 and record.speedup > 0


@pytest.mark.skipif(not Path(PAIRS).exists(), reason="the logged SmolLM2 rows are not here")
def test_full_vocabulary_rows_keep_the_logged_values_and_spread_the_tail():
    from resispec.benchmarks.partial_resolution_speed import full_vocabulary_rows

    pairs = read_logged(PAIRS)
    [(p, q)] = full_vocabulary_rows(pairs, "q_weak", 1)
    assert p.size == q.size == 49152
    np.testing.assert_allclose([p.sum(), q.sum()], 1.0, atol=1e-12)
    kept = pairs.token_ids[0]
    np.testing.assert_allclose(p[kept], pairs.p[0] / (pairs.p[0].sum() + pairs.p_tail[0]), rtol=1e-6)
    rest = np.setdiff1d(np.arange(49152), kept)
    assert np.ptp(q[rest]) == 0.0
