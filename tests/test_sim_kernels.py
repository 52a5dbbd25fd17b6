"""The simulator's batched kernels equal the core's reference verifiers on small instances.

The reference enumerates every candidate tuple with the core's drafting scheme and runs the core
verifier's own step rule (``SequentialVerifier._steps``) on it, so a kernel cannot drift from the
verifier it claims to measure.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from scipy.stats import chisquare

from resispec import get_verifier
from resispec.drafting import DRAFTING_SCHEMES, masked_draft, top_k_tokens
from resispec.ratio_profile import RatioProfile
from resispec.verifiers.rejection import rejection_step
from resispec.verifiers.resispec_paper import paper_residual
from sim.batch import PairBatch
from sim.kernels import K_INDEPENDENT, SUPPORTED, MonteCarlo, step_stats
from sim.kernels.closed_form import shaped_residual_drift
from sim.kernels.tuple_chains import candidate_tuples, draw_tuples, paper_chain, rrs_wor_chain
from tests.strategies import instances

TOLERANCE = 1e-12
EXACT = MonteCarlo(samples=8, enumeration_limit=10**6)


def run_steps(verifier, bound, candidates):
    """The core rule on one tuple: acceptance probabilities per step, final residual (None if never reached)."""
    steps = verifier._steps(bound, np.asarray(candidates, dtype=np.int64))
    accept = []
    for _ in candidates:
        accept.append(next(steps))
        if accept[-1] >= 1.0:
            return accept, None
    try:
        next(steps)
    except StopIteration as stop:
        return accept, stop.value
    raise AssertionError("the step generator yielded too many acceptance probabilities")


def reference(name, p, q, k):
    """``(accepted, reached, law_after)`` by enumeration: per step, and the output law after i rejections."""
    verifier = get_verifier(name)
    limit = verifier.scheme.max_candidates(q)
    count = k if limit is None else min(k, limit)
    bound = verifier.bind(p, q, count)
    accepted, reached = np.zeros(k), np.zeros(k)
    remaining = np.zeros((k, p.size))  # unnormalised output law from step i on
    for candidates, probability in verifier.scheme.tuples(bound.q, count):
        accept, residual = run_steps(verifier, bound, candidates)
        reach = np.cumprod([1.0, *(1.0 - np.array(accept[:-1]))])
        emitted = np.zeros((len(accept) + 1, p.size))
        for i, a in enumerate(accept):
            accepted[i] += probability * reach[i] * a
            reached[i] += probability * reach[i]
            emitted[i, candidates[i]] = probability * reach[i] * a
        if residual is not None and residual.sum() > 0:
            emitted[len(accept)] = probability * reach[-1] * (1.0 - accept[-1]) * residual / residual.sum()
        remaining[: len(accept)] += np.cumsum(emitted[::-1], axis=0)[::-1][: len(accept)]
    return accepted, reached, remaining


def single(p, q):
    return PairBatch.from_arrays(p[None, :], q[None, :])


@given(instances(max_v=5, max_k=3))
@settings(max_examples=120)
def test_step_statistics_equal_the_core_reference(instance):
    p, q, k = instance
    for name in SUPPORTED:
        stats = step_stats(name, single(p, q), k, np.random.default_rng(0), EXACT)
        accepted, reached, remaining = reference(name, p, q, k)
        assert stats.exact
        assert np.allclose(stats.accepted[0], accepted, atol=TOLERANCE, rtol=0), name
        assert np.allclose(stats.reached[0], reached, atol=TOLERANCE, rtol=0), name
        verifier = get_verifier(name)
        if verifier.scheme.max_candidates(q) is None or k <= verifier.scheme.max_candidates(q):
            assert stats.acceptance[0] == pytest.approx(verifier.acceptance(p, q, k), abs=1e-11), name
        if name in ("rrs", "spectr", "resispec", "topk"):  # residual = the output law after i rejections
            for i in range(k):
                if reached[i] > 1e-9:
                    law = remaining[i] / remaining[i].sum()
                    proposal = q if name != "topk" else np.eye(p.size)[top_k_tokens(q, i + 1)[i]]
                    assert stats.drift[0, i] == pytest.approx(reached[i] * 0.5 * np.abs(law - proposal).sum(), abs=1e-9), name


@given(instances(max_v=5, max_k=3))
@settings(max_examples=60)
def test_tuple_chains_follow_the_core_rules_tuple_by_tuple(instance):
    p, q, k = instance
    batch = single(p, q)
    for name, chain, drafting in (("rrs_wor", rrs_wor_chain, "wor"), ("resispec_paper", paper_chain, "iid")):
        tuples = candidate_tuples(batch, k, drafting, 8, 10**6, np.random.default_rng(0))
        accept, tv = chain(batch.p, batch.q, tuples.pair, tuples.candidates, tuples.steps)
        verifier = get_verifier(name)
        count = int(tuples.steps[0])
        bound = verifier.bind(p, q, count)
        for row, candidates in enumerate(tuples.candidates[:, :count]):
            expected, _ = run_steps(verifier, bound, candidates)
            assert np.allclose(accept[row, : len(expected)], expected, atol=TOLERANCE, rtol=0), name
            target, proposal = bound.p, bound.q
            for i, x in enumerate(candidates[: len(expected)]):  # residual targets from the core helpers
                if drafting == "wor":
                    proposal = masked_draft(bound.q, candidates[:i])
                assert tv[row, i] == pytest.approx(0.5 * np.abs(target - proposal).sum(), abs=1e-12), name
                if expected[i] >= 1.0:
                    break
                target = rejection_step(target, proposal, x)[1] if name == "rrs_wor" else paper_residual(target, q, x)


def test_shaped_residual_drift_reads_the_profile_for_any_thresholds():
    rng = np.random.default_rng(11)
    for _ in range(60):
        p, q = rng.dirichlet(np.full(7, 0.5)), rng.dirichlet(np.full(7, 0.5))
        p[rng.integers(7)], q[rng.integers(7)] = 0.0, 0.0
        p, q = p / p.sum(), q / q.sum()
        T = np.sort(rng.exponential(2.0, size=4))[::-1]
        R = rng.uniform(0.0, 3.0, size=4)  # any R: both branches of the cut
        profile = RatioProfile(p, q)
        expected = [np.maximum(np.minimum(p, t * q) + np.maximum(p - T[0] * q, 0.0) - r * q, 0.0).sum()
                    for t, r in zip(T, R)]
        assert np.allclose(shaped_residual_drift(profile, T, R, profile.g(T)), expected, atol=1e-12, rtol=0)


def test_k_independent_verifiers_truncate_to_smaller_k():
    rng = np.random.default_rng(6)
    batch = PairBatch.from_arrays(rng.dirichlet(np.ones(5), size=4), rng.dirichlet(np.full(5, 0.4), size=4))
    for name in SUPPORTED:
        deep, shallow = (step_stats(name, batch, k, np.random.default_rng(0), EXACT) for k in (4, 2))
        same = all(np.allclose(getattr(deep.truncated(2), field), getattr(shallow, field), atol=1e-14)
                   for field in ("accepted", "reached", "drift"))
        assert same == (name in K_INDEPENDENT), name
    with pytest.raises(ValueError, match="truncate"):
        deep.truncated(5)


def test_kernels_are_vectorised_row_by_row():
    rng = np.random.default_rng(3)
    p, q = rng.dirichlet(np.ones(6), size=5), rng.dirichlet(np.full(6, 0.5), size=5)
    batch = PairBatch.from_arrays(p, q)
    for name in SUPPORTED:
        together = step_stats(name, batch, 3, np.random.default_rng(0), EXACT)
        for n in range(5):
            alone = step_stats(name, single(p[n], q[n]), 3, np.random.default_rng(0), EXACT)
            assert np.allclose(together.accepted[n], alone.accepted[0], atol=1e-14), name
            assert np.allclose(together.drift[n], alone.drift[0], atol=1e-14), name


def test_batched_iid_draws_are_the_core_draws():
    q = np.random.default_rng(1).dirichlet(np.full(300, 0.3))
    batched = draw_tuples(q, 4, "iid", 50, np.random.default_rng(7))
    rng = np.random.default_rng(7)
    assert np.array_equal(batched, [DRAFTING_SCHEMES["iid"].draft(q, 4, rng) for _ in range(50)])


def test_batched_wor_draws_follow_the_core_tuple_probabilities():
    q = np.array([0.5, 0.3, 0.15, 0.05, 0.0])
    scheme = DRAFTING_SCHEMES["wor"]
    draws = draw_tuples(q, 3, "wor", 100_000, np.random.default_rng(3))
    tuples, counts = np.unique(draws, axis=0, return_counts=True)
    expected = np.array([scheme.probability(q, t) for t in tuples]) * draws.shape[0]
    assert len(tuples) == scheme.tuple_count(q, 3) == 24  # never the token with q = 0, never a repeat
    assert chisquare(counts, expected).pvalue > 1e-3
    distinct_iid = np.prod(q[tuples], axis=1)  # a plausible wrong law: i.i.d. tuples without repeats
    assert chisquare(counts, distinct_iid * counts.sum() / distinct_iid.sum()).pvalue < 1e-6  # the test has power


def test_monte_carlo_covers_the_exact_value():
    rng = np.random.default_rng(5)
    p, q = rng.dirichlet(np.ones(12), size=30), rng.dirichlet(np.ones(12), size=30)
    batch = PairBatch.from_arrays(p, q)
    for name in ("rrs_wor", "resispec_paper"):
        exact = step_stats(name, batch, 3, rng, MonteCarlo(enumeration_limit=10**4))
        sampled = step_stats(name, batch, 3, np.random.default_rng(9), MonteCarlo(samples=400, enumeration_limit=1))
        assert exact.exact and not sampled.exact and "monte carlo" in sampled.method
        assert np.abs(sampled.acceptance - exact.acceptance).mean() < 0.02, name
        assert abs(sampled.mean_acceptance().value - exact.mean_acceptance().value) < 0.01, name
        for estimate, value in zip(sampled.drift_curve(), exact.drift_curve()):
            assert abs(estimate.value - value.value) < 4 * estimate.half_width / 1.96 + 0.01, name


def test_past_the_drafts_support_wor_steps_do_not_exist():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.7, 0.3, 0.0])
    stats = step_stats("rrs_wor", single(p, q), 3, np.random.default_rng(0), EXACT)
    assert stats.reached[0, 2] == 0 and stats.accepted[0, 2] == 0
    assert stats.acceptance[0] == pytest.approx(get_verifier("rrs_wor").acceptance(p, q, 2), abs=1e-14)
    assert np.isnan(step_stats("topk", single(p, q), 3).drift_curve()[2].value)


def test_unsupported_verifier_and_missing_generator_are_named():
    batch = single(np.array([0.5, 0.5]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="supports"):
        step_stats("ears", batch, 2)
    with pytest.raises(ValueError, match="rng"):
        step_stats("rrs_wor", batch, 2)
    with pytest.raises(ValueError, match="k"):
        step_stats("rrs", batch, 0)
