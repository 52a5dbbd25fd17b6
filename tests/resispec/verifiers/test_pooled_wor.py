"""pooled_wor: exact law, selection law = t (race integrals against enumeration), acceptance against the
WOR transport LP and rrs_wor / resispec_wor, the sampling audit, k = 1 = sps, degenerate drafts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from resispec import get_verifier
from resispec.audit import sample_audit
from resispec.bounds import optimal_acceptance_lp
from resispec.drafting import DRAFTING_SCHEMES
from resispec.verifiers.base import repeat_rows
from resispec.verifiers.pooled_wor.plan import SMALLEST_RATE, select, selection_probabilities
from tests.resispec.verifiers.test_resispec_wor import family_pairs
from tests.strategies import instances

TOLERANCE = 1e-12
LP_TOLERANCE = 1e-7
WOR = DRAFTING_SCHEMES["wor"]
POOLED_WOR = get_verifier("pooled_wor")

SHORT_SCANS = [  # (k, p, q) from a seeded sweep: the scans alone fall short of alpha*-WOR = 1 (by 1e-4 .. 3e-2)
    (2, [0.026591522573726052, 0.3697069815311811, 0.3207432732408141, 0.16614550597584823, 0.10065166086591404,
         0.016161055812516555],
     [0.09584397763550162, 0.18570466663910604, 0.30699342900161863, 0.16955626660016593, 0.10448737686315053,
      0.13741428326045715]),
    (5, [0.2790203158498977, 0.009617868493666401, 0.0469334807741972, 0.3642976054874949, 0.0013512877153085768,
         0.06486356517666957, 0.23391587650276566],
     [0.01788193275176812, 0.001669473137906675, 0.004996707684030028, 0.07700873736778131, 0.6897537537133754,
      0.048626739982277074, 0.16006265536286127]),
    (3, [0.3246050468956951, 0.00689874138109828, 0.12505749241551742, 0.19044748446117585, 0.24907108510611875,
         0.0, 0.10392014974039462],
     [0.1738418192330628, 0.2920064046210086, 0.03851639570867324, 0.07905014152229546, 0.1028828689057966,
      0.25283722840280454, 0.06086514160635874]),
    (2, [0.08872290070458913, 0.0011716955908073238, 0.8793799437699337, 0.006948795298739101, 0.006455238426207452,
         0.01732142620972349],
     [0.11455621473325489, 0.0004374097958358556, 0.8260707872960159, 0.002341541970699322, 0.009396030279722961,
      0.047198015924471044]),
]


def enumerate_pooled_wor(p: np.ndarray, q: np.ndarray, k: int):
    """``(bound, emitted law, acceptance, selection law)`` summed over every WOR candidate tuple."""
    bound = POOLED_WOR.bind(p, q, k)
    law, selected, acceptance = np.zeros(p.size), np.zeros(p.size), 0.0
    for candidates, probability in WOR.tuples(bound.q, k):
        candidates = np.array(candidates)
        conditional, accepted = POOLED_WOR._law(bound, candidates)
        law += probability * conditional
        acceptance += probability * accepted
        np.add.at(selected, candidates, probability * selection_probabilities(bound.plan, candidates[None])[0])
    return bound, law, acceptance, selected


def check_exact(p: np.ndarray, q: np.ndarray, k: int) -> None:
    bound, law, acceptance, selected = enumerate_pooled_wor(p, q, k)
    assert np.abs(law - p).max() <= TOLERANCE, (p, q, k, law)
    assert np.abs(selected - bound.plan.selection_law[0]).max() <= TOLERANCE, (p, q, k)
    assert abs(acceptance - bound.acceptance()) <= TOLERANCE, (p, q, k)


@given(instances(max_v=6, max_k=4))
@settings(max_examples=150, deadline=None)
def test_exact_law_and_selection_law(instance):
    p, q, k = instance
    if k > np.count_nonzero(q):
        return
    check_exact(p, q, k)


@pytest.mark.parametrize("size, k", [(7, 3), (7, 5)])
def test_exact_on_seeded_families(size, k):
    for _, p, q in family_pairs(4, size, seed=1700 + size * 10 + k):
        check_exact(p, q, k)


def test_acceptance_reaches_the_wor_optimum_on_most_instances():
    """Within 1e-7 of the transport LP on every one of 60 random small instances (the target asks >= 90 %),
    never above it, and never below max(rrs_wor, resispec_wor). (These 60 need no mixture; the short-scan
    instances below do.)"""
    rng = np.random.default_rng(1705)
    hits, total, below = 0, 0, []
    for i in range(60):
        size = int(rng.integers(3, 7))
        k = int(rng.integers(2, min(4, size) + 1))
        alpha = (0.1, 0.5, 2.0)[i % 3]
        p, q = rng.dirichlet(np.full(size, alpha)), rng.dirichlet(np.full(size, alpha))
        if k > np.count_nonzero(q):
            continue
        ceiling = optimal_acceptance_lp(p, q, k, "wor")
        ours = POOLED_WOR.acceptance(p, q, k)
        assert ours <= ceiling + LP_TOLERANCE
        total += 1
        hits += ours >= ceiling - LP_TOLERANCE
        best_sequential = max(get_verifier(name).acceptance(p, q, k) for name in ("rrs_wor", "resispec_wor"))
        if ours < best_sequential - LP_TOLERANCE:
            below.append((p, q, k, ours, best_sequential))
    assert hits == total, (hits, total)
    assert not below, below[0]


@pytest.mark.parametrize("k, p, q", SHORT_SCANS)
def test_mixture_reaches_the_wor_optimum_where_the_scans_fall_short(k, p, q):
    """Column generation of "latest in order" rules lifts the acceptance to the LP optimum (here 1), above
    resispec_wor and rrs_wor, and the mixed rule is exact: law p, enumerated selection law t."""
    p, q = np.array(p), np.array(q)
    plan = POOLED_WOR.bind(p, q, k).plan.plans[0]
    ceiling = optimal_acceptance_lp(p, q, k, "wor")
    assert plan.column_weights.size > 0 and np.minimum(p, plan.scan_law).sum() < ceiling - 1e-5
    assert abs(plan.scan_weight + plan.column_weights.sum() - 1.0) <= TOLERANCE
    ours = POOLED_WOR.acceptance(p, q, k)
    assert abs(ours - ceiling) <= LP_TOLERANCE
    assert ours >= max(get_verifier(name).acceptance(p, q, k) for name in ("rrs_wor", "resispec_wor"))
    check_exact(p, q, k)


@pytest.mark.parametrize("k, p, q", SHORT_SCANS[::3])
def test_mixture_selection_draws_its_selection_probabilities(k, p, q):
    """The rule choice (a split of the first selection uniform) against the exact selection probabilities:
    every WOR tuple, 20,000 uniform rows each, every frequency within 5 standard deviations."""
    p, q, n = np.array(p), np.array(q), 20_000
    plan, rng = repeat_rows(POOLED_WOR.bind(p, q, k).plan, n), np.random.default_rng(1709)
    for candidates, _ in WOR.tuples(q, k):
        rows = np.repeat(np.array(candidates)[None], n, axis=0)
        drawn = np.bincount(select(plan, rows, rng.random((n, k))), minlength=k) / n
        exact = selection_probabilities(plan, rows[:1])[0]
        assert (np.abs(drawn - exact) <= 5 * np.sqrt(exact * (1 - exact) / n) + 1 / n).all(), (candidates, drawn, exact)


def test_k1_is_sps():
    sps = get_verifier("sps")
    p, q = np.array([0.5, 0.2, 0.3, 0.0]), np.array([0.1, 0.4, 0.2, 0.3])
    for x in range(4):
        assert np.allclose(POOLED_WOR.conditional_law(p, q, [x]), sps.conditional_law(p, q, [x]), atol=TOLERANCE)
    assert np.allclose(POOLED_WOR.bind(p, q, 1).plan.selection_law[0], q, atol=TOLERANCE)


def test_degenerate_draft_selects_the_first_candidate():
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.0, 1.0, 2.2e-311])
    bound = POOLED_WOR.bind(p, q, 2)
    assert q[2] < SMALLEST_RATE and bound.plan.first_drawn[0]
    assert np.array_equal(bound.plan.selection_law[0], q)
    check_exact(p, q, 2)


def test_sampling_audit_passes():
    _, p, q = family_pairs(3, 8, seed=1706)[2]
    result = sample_audit("pooled_wor", p, q, 4, n=4000, seed=1707)
    assert result.passed, result


def test_plan_blocks_and_cut():
    """The selected candidate lies in the cut iff every candidate does: t(H) = P_k(H)."""
    _, p, q = family_pairs(3, 7, seed=1708)[0]
    bound, _, _, selected = enumerate_pooled_wor(p, q, 3)
    plan = bound.plan.plans[0]  # the row's NumPy plan
    inside = sum(probability for candidates, probability in WOR.tuples(q, 3) if plan.inside[list(candidates)].all())
    assert abs(selected[plan.inside].sum() - inside) <= TOLERANCE
    assert abs(plan.all_inside - inside) <= TOLERANCE


def test_bench_verify_times_it(capsys):
    from resispec.benchmarks.verify_speed import DEFAULT_VOCABS, SLOW_PLANS, skipped_by_default
    from resispec.cli import main
    assert main(["bench", "verify", "--vocab", "64", "--k", "2", "--repeats", "2", "--verifier", "pooled_wor",
                 "--json"]) == 0
    assert '"verifier": "pooled_wor"' in capsys.readouterr().out
    assert [skipped_by_default("pooled_wor", vocab) for vocab in DEFAULT_VOCABS] == [False, False, True]
    assert skipped_by_default("pooled_wor", SLOW_PLANS["pooled_wor"] + 1) and not skipped_by_default("pooled", 10**6)
