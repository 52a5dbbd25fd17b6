"""The simulator's batched kernels equal the core's reference verifiers on small instances.

The reference enumerates every candidate tuple with the core's drafting scheme and runs the core
verifier's own step rule (``SequentialVerifier._steps``) on it, so a kernel cannot drift from the
verifier it claims to measure. The residual target after a rejected prefix h is read off the core
too: an exact verifier emits ``r_h`` once h is rejected, so ``r_h`` is the law the core's steps emit
from there on, summed over the tuples that start with h.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings

from resispec import get_verifier
from resispec.audit import exact_law
from resispec.bounds import optimal_acceptance
from resispec.drafting import DRAFTING_SCHEMES, masked_draft, top_k_tokens
from resispec.row_ratio_profile import RowRatioProfile
from resispec.sim.batch import PairBatch
from resispec.sim.kernels import CLOSED_FORM_KERNELS, SUPPORTED, MonteCarlo, step_stats
from resispec.sim.kernels.closed_form import resispec_wor_stats, shaped_residual_drift
from resispec.sim.kernels.tuple_chains import (
    candidate_tuples,
    draw_tuples,
    paper_chain,
    resispec_wor_chain,
    rrs_wor_chain,
)
from resispec.verifiers import VERIFIERS
from resispec.verifiers.pooled.plan import selection_probabilities
from resispec.verifiers.resispec_paper import paper_residual, pour_order
from tests.strategies import instances

TOLERANCE = 1e-12
EXACT = MonteCarlo(samples=8, enumeration_limit=10**6)
SEQUENTIAL = [name for name in SUPPORTED if not VERIFIERS[name].single_step]
TARGETS = ("rrs", "rrs_wor", "spectr", "resispec", "resispec_wor")
"""Exact sequential verifiers whose proposal is q or the masked draft: their drift is checked against
the residual targets the core emits."""


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
    """``(accepted, reached, law_after, targets)`` by enumeration: per step, the output law after i
    rejections, and per rejected prefix h its reach probability and the law emitted from there on."""
    verifier = get_verifier(name)
    limit = verifier.scheme.max_candidates(q)
    count = k if limit is None else min(k, limit)
    bound = verifier.bind(p, q, count)
    accepted, reached = np.zeros(k), np.zeros(k)
    remaining = np.zeros((k, p.size))  # unnormalised output law from step i on
    targets = defaultdict(lambda: [0.0, np.zeros(p.size)])  # prefix -> [reach, unnormalised law from there]
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
        after = np.cumsum(emitted[::-1], axis=0)[::-1][: len(accept)]
        remaining[: len(accept)] += after
        for i in range(len(accept)):
            entry = targets[tuple(int(x) for x in candidates[:i])]
            entry[0] += probability * reach[i]
            entry[1] += after[i]
    return accepted, reached, remaining, targets


def target_drift(name, q, k, targets):
    """``drift_i = sum_{|h| = i-1} P(reach h) TV(r_h, s_h)`` from the core's residual targets."""
    drift = np.zeros(k)
    wor = get_verifier(name).drafting == "wor"
    for prefix, (reach, law) in targets.items():
        if reach > 1e-12:
            proposal = masked_draft(q, np.array(prefix, dtype=np.int64)) if wor else q
            drift[len(prefix)] += reach * 0.5 * np.abs(law / law.sum() - proposal).sum()
    return drift


def single(p, q):
    return PairBatch.from_arrays(p[None, :], q[None, :])


@given(instances(max_v=5, max_k=3))
@settings(max_examples=100)
def test_step_statistics_equal_the_core_reference(instance):
    p, q, k = instance
    for name in SEQUENTIAL:
        stats = step_stats(name, single(p, q), k, np.random.default_rng(0), EXACT)
        accepted, reached, remaining, targets = reference(name, p, q, k)
        assert stats.exact
        assert np.allclose(stats.accepted[0], accepted, atol=TOLERANCE, rtol=0), name
        assert np.allclose(stats.reached[0], reached, atol=TOLERANCE, rtol=0), name
        verifier = get_verifier(name)
        if verifier.scheme.max_candidates(q) is None or k <= verifier.scheme.max_candidates(q):
            assert stats.acceptance[0] == pytest.approx(verifier.acceptance(p, q, k), abs=1e-11), name
        if name in TARGETS:
            assert np.allclose(stats.drift[0], target_drift(name, q, k, targets), atol=1e-9, rtol=0), name
        if name == "topk":  # residual = the output law after i rejections, proposal the point mass at x_i
            for i in range(k):
                if reached[i] > 1e-9:
                    law = remaining[i] / remaining[i].sum()
                    proposal = np.eye(p.size)[top_k_tokens(q, i + 1)[i]]
                    assert stats.drift[0, i] == pytest.approx(reached[i] * 0.5 * np.abs(law - proposal).sum(), abs=1e-9)


@given(instances(max_v=5, max_k=4))
@settings(max_examples=60)
def test_pooled_is_one_selection_step_with_the_core_law(instance):
    p, q, k = instance
    stats = step_stats("pooled", single(p, q), k)
    bound = get_verifier("pooled").bind(p, q, k)
    law = exact_law("pooled", p, q, k)
    selected = np.zeros(p.size)  # law of the selected token, by enumeration of the i.i.d. tuples
    for candidates, probability in DRAFTING_SCHEMES["iid"].tuples(q, k):
        candidates = np.asarray(candidates, dtype=np.int64)
        np.add.at(selected, candidates, probability * selection_probabilities(bound.plan, candidates[None])[0])
    assert stats.exact and stats.accepted[0, 0] == pytest.approx(law.acceptance, abs=TOLERANCE)
    assert stats.accepted[0, 0] == pytest.approx(optimal_acceptance(p, q, k), abs=1e-11)
    assert stats.drift[0, 0] == pytest.approx(0.5 * np.abs(p - selected).sum(), abs=1e-11)
    assert stats.reached[0, 0] == 1 and not stats.reached[0, 1:].any() and not stats.accepted[0, 1:].any()
    curve = stats.drift_curve()
    assert curve[0].value == pytest.approx(1.0 - stats.residual_curve()[0].value, abs=1e-11)
    assert all(np.isnan(point.value) for point in curve[1:])


@given(instances(max_v=5, max_k=3))
@settings(max_examples=50)
def test_tuple_chains_follow_the_core_rules_tuple_by_tuple(instance):
    p, q, k = instance
    batch = single(p, q)
    chains = (("rrs_wor", rrs_wor_chain, "wor"), ("resispec_wor", resispec_wor_chain, "wor"),
              ("resispec_paper", paper_chain, "iid"))
    for name, chain, drafting in chains:
        tuples = candidate_tuples(batch, k, drafting, 8, 10**6, [np.random.default_rng(0)])
        accept, tv = chain(batch.p, batch.q, tuples.pair, tuples.candidates, tuples.steps)
        verifier = get_verifier(name)
        count = int(tuples.steps[0])
        bound = verifier.bind(p, q, count)
        targets = reference(name, p, q, count)[3] if name != "resispec_paper" else None
        for row, candidates in enumerate(tuples.candidates[:, :count]):
            expected, _ = run_steps(verifier, bound, candidates)
            assert np.allclose(accept[row, : len(expected)], expected, atol=TOLERANCE, rtol=0), name
            target, proposal = bound.p, bound.q
            for i, x in enumerate(candidates[: len(expected)]):
                if drafting == "wor":
                    proposal = masked_draft(bound.q, candidates[:i])
                    reach, law = targets[tuple(int(y) for y in candidates[:i])]
                    target = law / law.sum() if reach > 1e-12 else None
                if target is not None:  # residual targets: the core's emitted law (WOR), the helpers (paper)
                    assert tv[row, i] == pytest.approx(0.5 * np.abs(target - proposal).sum(), abs=1e-9), name
                if expected[i] >= 1.0:
                    break
                if name == "resispec_paper":
                    target = paper_residual(target[None], q[None], np.array([x]), pour_order(q[None]))[0]


def test_shaped_residual_drift_reads_the_profile_for_any_thresholds():
    rng = np.random.default_rng(11)
    for _ in range(60):
        p, q = rng.dirichlet(np.full(7, 0.5)), rng.dirichlet(np.full(7, 0.5))
        p[rng.integers(7)], q[rng.integers(7)] = 0.0, 0.0
        p, q = p / p.sum(), q / q.sum()
        T = np.sort(rng.exponential(2.0, size=4))[::-1]
        R = rng.uniform(0.0, 3.0, size=4)  # any R: both branches of the cut
        profile = RowRatioProfile(p[None], q[None])
        expected = [np.maximum(np.minimum(p, t * q) + np.maximum(p - T[0] * q, 0.0) - r * q, 0.0).sum()
                    for t, r in zip(T, R)]
        drift = shaped_residual_drift(profile, T[None].copy(), R[None], profile.g(T[None].copy()))
        assert np.allclose(drift[0], expected, atol=1e-12, rtol=0)


@given(instances(max_v=5, max_k=3))
@settings(max_examples=30, deadline=None)
def test_pooled_wor_is_one_selection_step_with_the_core_law(instance):
    p, q, k = instance
    k = min(k, int(np.count_nonzero(q)))
    stats = step_stats("pooled_wor", single(p, q), k)
    bound = get_verifier("pooled_wor").bind(p, q, k)
    law = exact_law("pooled_wor", p, q, k)
    assert stats.exact and stats.accepted[0, 0] == pytest.approx(law.acceptance, abs=TOLERANCE)
    assert stats.drift[0, 0] == pytest.approx(0.5 * np.abs(p - bound.plan.selection_law[0]).sum(), abs=1e-14)
    assert stats.reached[0, 0] == 1 and not stats.reached[0, 1:].any()


def test_k_independent_verifiers_truncate_to_smaller_k():
    rng = np.random.default_rng(6)
    batch = PairBatch.from_arrays(rng.dirichlet(np.ones(5), size=4), rng.dirichlet(np.full(5, 0.4), size=4))
    for name in SUPPORTED:
        deep, shallow = (step_stats(name, batch, k, np.random.default_rng(0), EXACT) for k in (4, 2))
        same = all(np.allclose(getattr(deep.truncated(2), field), getattr(shallow, field), atol=1e-14)
                   for field in ("accepted", "reached", "drift"))
        assert same == VERIFIERS[name].k_independent, name
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
    batched = draw_tuples(q, 4, 50, np.random.default_rng(7))
    rng = np.random.default_rng(7)
    assert np.array_equal(batched, [DRAFTING_SCHEMES["iid"].draft(q, 4, rng) for _ in range(50)])


def test_monte_carlo_covers_the_exact_value():
    rng = np.random.default_rng(5)
    p, q = rng.dirichlet(np.ones(12), size=30), rng.dirichlet(np.ones(12), size=30)
    batch = PairBatch.from_arrays(p, q)
    for name, unit in (("rrs_wor", "rejection paths"), ("resispec_wor", "rejection paths"),
                       ("resispec_paper", "tuples")):
        exact = step_stats(name, batch, 3, rng, MonteCarlo(enumeration_limit=10**4))
        sampled = step_stats(name, batch, 3, np.random.default_rng(9), MonteCarlo(samples=400, enumeration_limit=1))
        assert exact.exact and not sampled.exact and sampled.method == f"monte carlo (400 {unit} per pair)"
        assert np.abs(sampled.acceptance - exact.acceptance).mean() < 0.02, name
        assert abs(sampled.mean_acceptance().value - exact.mean_acceptance().value) < 0.01, name
        for curves in (("drift_curve", "drift_curve"), ("residual_curve", "residual_curve")):
            for estimate, value in zip(getattr(sampled, curves[0])(), getattr(exact, curves[1])()):
                assert abs(estimate.value - value.value) < 4 * estimate.half_width / 1.96 + 0.01, name


def test_rejection_paths_are_unbiased_and_nested_in_k():
    rng = np.random.default_rng(12)
    p, q = rng.dirichlet(np.full(7, 0.6), size=3), rng.dirichlet(np.full(7, 0.6), size=3)
    batch = PairBatch.from_arrays(p, q)
    paths = MonteCarlo(samples=20_000, enumeration_limit=1)
    for name in ("rrs_wor", "resispec_wor"):
        exact = step_stats(name, batch, 4, rng, EXACT)
        sampled = step_stats(name, batch, 4, np.random.default_rng(1), paths)
        assert np.allclose(sampled.accepted[:, 0], exact.accepted[:, 0], atol=1e-14)  # step 1 integrated exactly
        for field in ("accepted", "reached", "drift"):  # binomial-scale error at 20,000 paths
            assert np.abs(getattr(sampled, field) - getattr(exact, field)).max() < 0.01, (name, field)
    deep, shallow = (step_stats("rrs_wor", batch, k, np.random.default_rng(3), MonteCarlo(64, 1)) for k in (4, 2))
    assert np.array_equal(deep.truncated(2).accepted, shallow.accepted)  # level i uses the i-th block of uniforms


def test_past_the_drafts_support_wor_steps_do_not_exist():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.7, 0.3, 0.0])
    for name in ("rrs_wor", "resispec_wor"):
        for monte_carlo, tolerance in ((EXACT, 1e-14), (MonteCarlo(samples=400, enumeration_limit=1), 0.05)):
            stats = step_stats(name, single(p, q), 3, np.random.default_rng(0), monte_carlo)
            assert stats.reached[0, 2] == 0 and stats.accepted[0, 2] == 0
            assert stats.acceptance[0] == pytest.approx(get_verifier(name).acceptance(p, q, 2), abs=tolerance)
    with pytest.raises(ValueError, match="k <= 2"):
        resispec_wor_stats(single(p, q), 3)
    assert np.isnan(step_stats("topk", single(p, q), 3).drift_curve()[2].value)


def test_unsupported_verifier_and_missing_generator_are_named():
    batch = single(np.array([0.5, 0.5]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="supports"):
        step_stats("ears", batch, 2)
    with pytest.raises(ValueError, match="rng"):
        step_stats("rrs_wor", batch, 2)
    with pytest.raises(ValueError, match="k"):
        step_stats("rrs", batch, 0)


def test_spectr_drift_stays_non_negative_when_rounding_puts_beta_above_one():
    """p == q: beta = 1 in exact arithmetic; rounded to 1 + 2e-16 it made the survival negative and the
    drift of the unreachable steps as large as -0.9 on some of these pairs."""
    p = np.random.default_rng(0).random((300, 3))
    p /= p.sum(axis=1, keepdims=True)
    stats = step_stats("spectr", PairBatch.from_arrays(p, p), 3)
    assert stats.drift.min() >= 0 and np.allclose(stats.acceptance, 1.0, atol=1e-12)


def test_every_simulated_verifier_declares_the_facts_its_kernels_need():
    """A class that declares a closed form has a closed-form kernel (and only such a class); a verifier without
    one for every k has a tuple chain; every simulated verifier has a plot colour."""
    from resispec.sim.kernels import CHAIN_KERNELS

    for name in SUPPORTED:
        facts = VERIFIERS[name]
        assert facts.closed_form == (name in CLOSED_FORM_KERNELS), name
        assert (not facts.closed_form or facts.closed_form_max_k is not None) == (name in CHAIN_KERNELS), name
        assert facts.colour is not None, name
