"""pooled: exact, reaches alpha*, its selection law is t, and its plan meets every step of the proof."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from scipy import stats

from resispec import get_verifier
from resispec.benchmarks.verify_speed import llm_like_pair
from resispec.bounds import optimal_acceptance
from resispec.cli import main
from resispec.drafting import DRAFTING_SCHEMES
from resispec.verifiers.pooled import Pooled
from resispec.verifiers.pooled.plan import PooledPlan, score_components, select, selection_probabilities
from tests.strategies import instances
from tests.timing_records import check_timing_records

TOLERANCE = 1e-12
POOLED = Pooled()


def first_row(plan: PooledPlan) -> SimpleNamespace:
    """Row 0 of a row plan (the single-instance API binds B = 1): its fields by token id or rank, and its
    pools only (the first ``pool_count`` columns)."""
    count = int(plan.pool_count[0])
    fields = {name: getattr(plan, name)[0] for name in ("q", "order", "rank", "density", "max_ratio_law",
                                                         "selection_law", "accept", "residual", "pool_start",
                                                         "pool_stop")}
    fields.update({name: getattr(plan, name)[0, :count] for name in ("pool_donor", "pool_receiver", "pool_transfer",
                                                                     "pool_mass")})
    return SimpleNamespace(k=plan.k, cut=int(plan.cut[0]), inside_mass=float(plan.inside_mass[0]),
                           alpha=float(plan.alpha[0]), pool_count=count,
                           pool_cumulative=plan.pool_cumulative[0, :count + 1], **fields)


def components(plan: PooledPlan, token: int) -> tuple[np.ndarray, np.ndarray]:
    """``(interval ranks, probabilities)`` of one candidate of ``token`` in row 0, padding dropped."""
    ranks, probabilities = score_components(plan, np.array([[token]]))
    keep = ranks[0, 0] < plan.rank.shape[1]
    return ranks[0, 0][keep], probabilities[0, 0][keep]


def selected_by_token(plan: PooledPlan, candidates: np.ndarray) -> np.ndarray:
    """The law of the selected token (V,) given the candidates of row 0."""
    law = np.zeros(plan.rank.shape[1])
    np.add.at(law, candidates, selection_probabilities(plan, candidates[None])[0])
    return law


def enumerate_pooled(p: np.ndarray, q: np.ndarray, k: int):
    """``(bound, emitted law, acceptance, selection law)`` summed over every i.i.d. candidate tuple."""
    bound = POOLED.bind(p, q, k)
    law, selected, acceptance = np.zeros(p.size), np.zeros(p.size), 0.0
    for candidates, probability in DRAFTING_SCHEMES["iid"].tuples(bound.q, k):
        candidates = np.array(candidates)
        conditional, accepted = POOLED._law(bound, candidates)
        law += probability * conditional
        acceptance += probability * accepted
        selected += probability * selected_by_token(bound.plan, candidates)
    return bound, law, acceptance, selected


def check_exact_and_optimal(p: np.ndarray, q: np.ndarray, k: int) -> None:
    bound, law, acceptance, selected = enumerate_pooled(p, q, k)
    alpha_star = optimal_acceptance(p, q, k)
    assert np.abs(law - bound.p).max() <= TOLERANCE, (p, q, k, law)
    assert np.abs(selected - bound.plan.selection_law[0]).max() <= TOLERANCE, (p, q, k, selected)
    assert acceptance == pytest.approx(alpha_star, abs=TOLERANCE)
    assert bound.acceptance() == pytest.approx(alpha_star, abs=TOLERANCE)
    assert bound.plan.alpha[0] == pytest.approx(alpha_star, abs=TOLERANCE)


@given(instances(max_v=6, max_k=4))
@settings(max_examples=250)
def test_exact_law_optimal_acceptance_and_selection_law_t(instance):
    """Enumerating every tuple: the output law is p, the acceptance alpha*, the selection law t."""
    check_exact_and_optimal(*instance)


CORNERS = {
    "p == q": (np.array([0.5, 0.3, 0.2]), np.array([0.5, 0.3, 0.2])),
    "one-hot p": (np.array([0.0, 1.0, 0.0, 0.0]), np.array([0.4, 0.1, 0.3, 0.2])),
    "one-hot q": (np.array([0.2, 0.3, 0.5]), np.array([0.0, 0.0, 1.0])),
    "disjoint": (np.array([0.6, 0.4, 0.0, 0.0]), np.array([0.0, 0.0, 0.7, 0.3])),
    "ratio ties": (np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.2, 0.4, 0.15, 0.25])),
    "tied groups": (np.array([0.1, 0.1, 0.2, 0.2, 0.4]), np.array([0.2, 0.2, 0.1, 0.1, 0.4])),
    "zeros in both": (np.array([0.0, 0.5, 0.0, 0.5, 0.0]), np.array([0.3, 0.0, 0.0, 0.3, 0.4])),
    "tiny masses": (np.array([0.5, 0.3, 0.2 - 2e-12, 1e-12, 1e-12]), np.array([0.2 - 3e-12, 0.3, 0.5, 1e-12, 2e-12])),
}


@pytest.mark.parametrize("name", CORNERS)
@pytest.mark.parametrize("k", [1, 2, 5])
def test_corner_cases(name, k):
    p, q = CORNERS[name]
    check_exact_and_optimal(p / p.sum(), q / q.sum(), k)


def test_k1_is_single_draft_speculative_sampling():
    p, q = np.array([0.4, 0.3, 0.3]), np.array([0.6, 0.3, 0.1])
    sps = get_verifier("sps")
    for token in range(3):
        np.testing.assert_allclose(POOLED.conditional_law(p, q, [token]), sps.conditional_law(p, q, [token]),
                                   atol=1e-15)


def plan_violations(rows: PooledPlan, p: np.ndarray, q: np.ndarray) -> dict[str, float]:
    """How far the plan (row 0) is from each step of the proof (all ~1e-16 when it is right)."""
    plan = first_row(rows)
    k, order, cut, f, t = plan.k, plan.order, plan.cut, plan.max_ratio_law, plan.selection_law
    inside, outside = order[:cut], order[cut:]
    m = plan.inside_mass
    violations = {
        "t >= p on H*": float(np.max(p[inside] - t[inside], initial=0.0)),
        "t <= p off H*": float(np.max(t[outside] - p[outside], initial=0.0)),
        "t(H*) = m^k": abs(t[inside].sum() - m ** k),
        "sum t = 1": abs(t.sum() - 1.0),
        "alpha* = 1 + p(H*) - m^k": abs(plan.alpha - (1.0 + p[inside].sum() - m ** k)),
    }
    # t is a selection law: in each block its prefix sums in rank order dominate those of f.
    violations["prefix domination"] = max(
        float(np.max(np.cumsum(f[block] - t[block]), initial=0.0)) for block in (inside, outside))
    # t/q is non-decreasing in rank within each block (the pools' prices exist); relative, over
    # normal q (t/q of a subnormal q carries its rounding).
    drafted = [block[q[block] >= np.finfo(float).tiny] for block in (inside, outside)]
    levels = [t[block] / q[block] for block in drafted]
    violations["t/q non-decreasing"] = max(
        float(np.max(-np.diff(level) / np.maximum(level[1:], 1e-300), initial=0.0)) for level in levels)
    donor, receiver = plan.pool_donor, plan.pool_receiver
    assert np.all(receiver < donor)
    assert np.all((donor < cut) == (receiver < cut)), "a pool crosses the cut"
    # The pools of a token never swap more score mass than it has (sum_l M_l <= q_x; absolute, as
    # the coupling's cumulative sums resolve mass to ~1e-16), and its interval law is a distribution.
    swapped = plan.pool_cumulative[plan.pool_stop] - plan.pool_cumulative[plan.pool_start]
    violations["pool masses <= q"] = float(np.max(swapped - q, initial=0.0))
    for x in np.flatnonzero(q > 0):
        assert np.all(components(rows, int(x))[1] >= 0)
    # Scores stay Uniform(0, 1): the score mass landing in each interval c is q_c.
    landing = np.zeros(p.size)
    for x in np.flatnonzero(q > 0):
        ranks, probabilities = components(rows, int(x))
        np.add.at(landing, ranks, q[x] * probabilities)
    violations["scores uniform"] = float(np.abs(landing - q[order]).max())
    # The swaps move exactly t - f: g = M (phi_y - phi_z), into z, out of y.
    moved = np.zeros(p.size)
    gain = plan.pool_mass * (plan.density[donor] - plan.density[receiver])
    np.add.at(moved, order[receiver], gain)
    np.subtract.at(moved, order[donor], gain)
    violations["swaps move t - f"] = float(np.abs(moved - (t - f)).max())
    max_ratio_law = np.diff(np.append(0.0, np.cumsum(q[order])) ** k)
    violations["f = (F + q)^k - F^k"] = float(np.abs(max_ratio_law - f[order]).max())
    return violations


@given(instances(max_v=12, max_k=8))
@settings(max_examples=200)
def test_plan_meets_every_step_of_the_proof(instance):
    p, q, k = instance
    bound = POOLED.bind(p, q, k)
    violations = plan_violations(bound.plan, bound.p, bound.q)
    assert max(violations.values()) <= TOLERANCE, violations


@pytest.mark.parametrize("k", [2, 4, 8])
def test_plan_on_a_large_llm_like_pair(k):
    _, p, q = llm_like_pair(4096, np.random.default_rng(k))
    plan = POOLED.bind(p, q, k).plan
    violations = plan_violations(plan, p, q)
    assert max(violations.values()) <= TOLERANCE, violations
    assert plan.alpha[0] == pytest.approx(optimal_acceptance(p, q, k), abs=TOLERANCE)
    assert np.minimum(p, plan.selection_law[0]).sum() == pytest.approx(plan.alpha[0], abs=TOLERANCE)
    assert plan.pool_count[0] > 100  # pools are many in general


def test_ties_in_ratio_are_ranked_by_token_id():
    p, q = np.full(6, 1 / 6), np.full(6, 1 / 6)
    plan = POOLED.bind(p, q, 3).plan
    np.testing.assert_array_equal(plan.order[0], np.arange(6))


def test_selection_follows_its_law_when_sampled():
    """``select`` driven by uniforms picks each candidate's token as often as ``selection_probabilities`` says."""
    p, q = np.array([0.05, 0.4, 0.1, 0.3, 0.15]), np.array([0.3, 0.1, 0.25, 0.1, 0.25])
    bound = POOLED.bind(p, q, 4)
    assert bound.plan.pool_count[0] > 0
    rng = np.random.default_rng(11)
    for candidates in (np.array([0, 2, 4, 2]), np.array([1, 3, 0, 0]), np.array([2, 2, 2, 2])):
        tokens = np.unique(candidates)
        probabilities = selected_by_token(bound.plan, candidates)[tokens]
        counts = np.zeros(p.size)
        for _ in range(4000):
            u = rng.random((1, 8))
            counts[candidates[int(select(bound.plan, candidates[None], u[:, :4], u[:, 4:])[0])]] += 1
        live = probabilities > 0
        assert counts.sum() == counts[tokens[live]].sum()
        if live.sum() > 1:
            assert stats.chisquare(counts[tokens[live]], probabilities[live] * counts.sum()).pvalue > 1e-4


def test_decisions_follow_the_conditional_law_and_report_indices():
    p, q = np.array([0.05, 0.4, 0.1, 0.3, 0.15]), np.array([0.3, 0.1, 0.25, 0.1, 0.25])
    bound = POOLED.bind(p, q, 3)
    rng = np.random.default_rng(5)
    for candidates in (np.array([0, 2, 4]), np.array([0, 0, 2]), np.array([3, 1, 0])):
        law = bound.conditional_law(candidates)
        counts = np.zeros(p.size)
        rejected = 0
        for _ in range(4000):
            token, index = bound.verify_rng(candidates, rng)
            counts[token] += 1
            if index >= 0:
                assert candidates[index] == token
            else:
                rejected += 1
                assert token not in candidates  # the residual lives off H*, every candidate in H*
        live = law > 0
        assert counts[~live].sum() == 0 and live.sum() > 1
        assert stats.chisquare(counts[live], law[live] * counts.sum()).pvalue > 1e-4
        accept = bound.accept_probability(candidates)
        assert abs(rejected / 4000 - (1 - accept)) < 5 * np.sqrt(0.25 / 4000) + 1e-12


def test_uniform_layout():
    """u[:k] interval, u[k:2k] position, u[2k] accept, u[2k+1] residual (documented in the module)."""
    assert POOLED.uniforms_needed(1) == 4 and POOLED.uniforms_needed(4) == 10
    p, q = np.array([0.05, 0.4, 0.1, 0.3, 0.15]), np.array([0.3, 0.1, 0.25, 0.1, 0.25])
    bound = POOLED.bind(p, q, 2)
    plan = bound.plan
    # Two copies of a token: with the same interval uniform, the position uniform decides the index.
    token = int(plan.order[0, 0])
    assert bound.verify([token, token], [0.5, 0.5, 0.2, 0.7, 0.0, 0.0])[1] == 1
    assert bound.verify([token, token], [0.5, 0.5, 0.7, 0.2, 0.0, 0.0])[1] == 0
    # The accept uniform: below min(1, p/t) accepts, above rejects into the residual.
    assert plan.accept[0, token] < 1
    assert bound.verify([token, token], [0.5, 0.5, 0.7, 0.2, 0.99, 0.0])[1] == -1
    # The residual uniform: inverse CDF over ids ascending, u = 0 gives the first id with residual mass.
    first = int(np.flatnonzero(plan.residual[0] > 0)[0])
    assert bound.verify([token, token], [0.5, 0.5, 0.7, 0.2, 0.99, 0.0]) == (first, -1)


@pytest.mark.parametrize("u", [np.zeros(3), np.zeros(7), np.full(6, 1.0)])
def test_bad_uniforms_are_refused(u):
    bound = POOLED.bind([0.5, 0.5], [0.3, 0.7], 2)
    with pytest.raises(ValueError, match="^u:"):
        bound.verify([0, 1], u)


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match="^k:"):
        POOLED.uniforms_needed(0)
    with pytest.raises(ValueError, match="^candidates:"):
        POOLED.verify([0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0, 2], np.zeros(6))


def test_audit_includes_pooled_and_it_reaches_the_optimum(capsys):
    status = main(["audit", "--verifier", "pooled", "--suite", "quick", "--samples", "1500", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 0 and report["passed"]
    for row in report["rows"]:
        assert row["verifier"] == "pooled" and row["verdict"] == "PASS"
        assert row["max_exact_error"] <= TOLERANCE
        assert row["mean_ratio_to_iid_optimum"] == pytest.approx(1.0, abs=TOLERANCE)


def test_bench_pooled_prints_one_record_per_vocabulary_and_k(capsys):
    start = time.perf_counter()
    assert main(["bench", "pooled", "--vocab", "64", "1024", "--k", "2", "4", "--repeats", "3", "--json"]) == 0
    wall = time.perf_counter() - start
    records = json.loads(capsys.readouterr().out)
    check_timing_records(
        records, fields=["vocab", "k", "pools", "softmax_seconds", "build_seconds", "build_ratio", "tuple_seconds",
                         "tuple_ratio"],
        configurations=[(64, 2), (64, 4), (1024, 2), (1024, 4)],
        times=["softmax_seconds", "build_seconds", "tuple_seconds"], ratios={"build_ratio": (), "tuple_ratio": ()},
        repeats=3, wall_seconds=wall)
    assert all(1 <= record["pools"] <= record["vocab"] for record in records)
