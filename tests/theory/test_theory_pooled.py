"""resispec.theory.pooled.pooled: its checkers catch broken plans, and its exact plan agrees with the float one."""

from __future__ import annotations

import itertools
from dataclasses import replace
from fractions import Fraction as F

import numpy as np
import pytest

from resispec.theory.common.exact import Instance
from resispec.theory.pooled.pooled import (
    bound_problems,
    canonical_law,
    certificate_problems,
    condition_problems,
    cut_problems,
    domination_problems,
    enumeration_cases,
    plan_cases,
    selection_problems,
    tight_cut_problems,
    uniform_problems,
)
from resispec.theory.pooled.pooling import build, interval_law, level, pooled_law, selection_given

# H* = the two lowest ratios, with pools in both blocks.
P_ = (F(1, 20), F(2, 5), F(1, 10), F(3, 10), F(3, 20))
Q_ = (F(3, 10), F(1, 10), F(1, 4), F(1, 10), F(1, 4))
K = 3


@pytest.fixture(scope="module")
def plan():
    plan = build(P_, Q_, K)
    assert plan.cut >= 2 and any(pool.donor < plan.cut for pool in plan.pools)
    assert any(pool.donor >= plan.cut for pool in plan.pools)
    return plan


def test_the_plan_passes_every_checker(plan):
    law = pooled_law(plan)
    assert not cut_problems(plan) and not tight_cut_problems(plan, law)
    assert not condition_problems(plan) and not domination_problems(plan)
    assert not uniform_problems(plan) and not selection_problems(plan, law)
    assert not certificate_problems(plan, law)
    assert canonical_law(plan.p, plan.t, plan.t) == (plan.p, plan.alpha)


def test_a_wrong_cut_is_caught(plan):
    assert cut_problems(replace(plan, cut=plan.cut + 1))
    assert cut_problems(replace(plan, alpha=plan.alpha - F(1, 100)))


def test_a_verifier_below_the_optimum_fails_the_cut_and_the_certificate(plan):
    """Select by the max-ratio rule (no pools) and verify against its true law f: exact, but it does not
    saturate the cut, so the acceptance falls short of alpha*."""
    max_ratio = build(P_, Q_, K, selection=plan.f)
    assert not max_ratio.pools
    law = pooled_law(max_ratio)
    assert law.law == P_ and law.acceptance < plan.alpha
    assert tight_cut_problems(max_ratio, law)
    assert any("acceptance" in m for m in certificate_problems(max_ratio, law))


def test_verifying_against_a_law_that_is_not_the_selection_law_is_caught(plan):
    law, _ = canonical_law(plan.p, plan.f, plan.t)  # select by max ratio, verify against t
    assert law != plan.p
    broken = replace(plan, t=plan.f)  # the pools still realise t; verify against f
    assert any("law" in m for m in certificate_problems(broken, pooled_law(broken)))


def test_a_wrong_selection_law_fails_the_conditions(plan):
    problems = condition_problems(replace(plan, t=plan.f))
    assert any("(i)" in m or "(ii)" in m for m in problems)
    assert any("alpha*" in m for m in problems)


def test_a_law_that_no_rule_selects_fails_the_bound(plan):
    """s(H*) < m^k: more selection mass outside H* than any rule of i.i.d. candidates can give."""
    outside = [x for x in range(plan.V) if x not in plan.inside]
    s = tuple(F(1, len(outside)) if x in outside else F(0) for x in range(plan.V))
    assert any("m^k" in m for m in bound_problems(plan, s))
    assert not bound_problems(plan, plan.f) and not bound_problems(plan, plan.t)


def test_a_law_without_prefix_domination_is_caught(plan):
    """Move selection mass from the lowest rank to the top of H*: the first prefix falls below f, and
    the coupling built from that law pairs a donor with a higher-ranked receiver."""
    low, high = plan.order[0], plan.order[plan.cut - 1]
    shift = plan.t[low] - plan.f[low] + plan.f[low] / 2
    t = list(plan.t)
    t[low] -= shift
    t[high] += shift
    broken = build(P_, Q_, K, selection=tuple(t))
    problems = domination_problems(broken)
    assert any("prefix domination" in m for m in problems)
    assert any("out of order" in m for m in problems)


@pytest.mark.parametrize("factor", [F(2), F(1, 2), F(-1)])
def test_a_broken_pool_weight_is_caught(plan, factor):
    first = plan.pools[0]
    broken = replace(plan, pools=(replace(first, mass=first.mass * factor), *plan.pools[1:]))
    law = pooled_law(broken)
    assert uniform_problems(broken)
    assert selection_problems(broken, law)
    assert certificate_problems(broken, law)
    assert any("score mass" in m for m in domination_problems(broken))


def test_level_is_the_smallest_root_and_refuses_an_unreachable_target():
    def F_(s):
        return min(s, F(1)) + max(s - 2, F(0))  # slope 1 on [0, 1], flat on [1, 2], slope 1 after

    assert level(F_, [F(1), F(2)], F(1, 2)) == F(1, 2)
    assert level(F_, [F(1), F(2)], F(1)) == F(1)
    assert level(F_, [F(1), F(2)], F(3)) == F(4)
    with pytest.raises(ValueError):
        level(lambda s: min(s, F(1)), [F(1)], F(2))
    with pytest.raises(ValueError):
        level(lambda s: F(1) + s, [F(1)], F(1, 2))


def test_k1_plan_is_sps():
    plan = build(P_, Q_, 1)
    assert plan.t == Q_ and not plan.pools and not domination_problems(plan)
    assert domination_problems(replace(plan, t=plan.p))


def _double_first_pool(inst: Instance):
    plan = build(inst.p, inst.q, inst.k)
    if not plan.pools:
        return plan
    first = plan.pools[0]
    return replace(plan, pools=(replace(first, mass=2 * first.mass), *plan.pools[1:]))


def _verify_against_f(inst: Instance):
    plan = build(inst.p, inst.q, inst.k)
    return replace(plan, t=plan.f)


def test_theorem_checks_fail_on_broken_plans(monkeypatch):
    """The registered checks themselves (not only the helpers) report FAIL when the plans are broken."""
    from resispec.theory.pooled import pooled

    monkeypatch.setattr(pooled, "plan_of", _double_first_pool)
    monkeypatch.setattr(pooled, "law_of", lambda inst: pooled_law(_double_first_pool(inst)))
    for check in (pooled.check_valid_selection_law, pooled.check_uniform_scores, pooled.check_certificate):
        outcome = check()
        assert not outcome.passed and "failures (first:" in outcome.checked
    monkeypatch.setattr(pooled, "plan_of", _verify_against_f)
    monkeypatch.setattr(pooled, "law_of", lambda inst: pooled_law(_verify_against_f(inst)))
    for check in (pooled.check_conditions, pooled.check_cut_bound, pooled.check_certificate):
        assert not check().passed


# --- the exact plan against the float plan (resispec.verifiers.pooled.plan) --------------------------

CROSS = plan_cases()[::2]


def floats(law) -> np.ndarray:
    return np.array([float(v) for v in law])


def float_plan(inst: Instance):
    """The float plan of the instance (one row)."""
    from resispec.validation import as_pair
    from resispec.verifiers.pooled.plan import pooled_plan

    p, q = as_pair(floats(inst.p), floats(inst.q))
    return pooled_plan(p[None], q[None], inst.k)


def same_ranks(inst: Instance) -> bool:
    """Rounding keeps the exact rank order and cut (it may break an exact tie differently)."""
    exact, plan = build(inst.p, inst.q, inst.k), float_plan(inst)
    return list(plan.order[0]) == list(exact.order) and int(plan.cut[0]) == exact.cut


@pytest.mark.parametrize("inst", CROSS, ids=str)
def test_exact_plan_matches_the_float_plan(inst: Instance):
    """t and alpha* to 1e-12. Exact ratio ties and tied cuts may be ordered differently once rounded
    (the float cut or order can differ), which leaves t and alpha* unchanged; f and each rank's swapped
    score mass are compared where the ranks agree."""
    exact, plan = build(inst.p, inst.q, inst.k), float_plan(inst)
    assert plan.alpha[0] == pytest.approx(float(exact.alpha), abs=1e-12)
    assert np.abs(plan.selection_law[0] - floats(exact.t)).max() <= 1e-12
    if same_ranks(inst):
        assert np.abs(plan.max_ratio_law[0] - floats(exact.f)).max() <= 1e-12
        swapped = np.zeros(inst.V)
        for pool in exact.pools:
            swapped[[pool.donor, pool.receiver]] += float(pool.mass)
        count = int(plan.pool_count[0])
        donor, receiver, mass = plan.pool_donor[0, :count], plan.pool_receiver[0, :count], plan.pool_mass[0, :count]
        float_swapped = np.bincount(donor, mass, inst.V) + np.bincount(receiver, mass, inst.V)
        assert np.abs(float_swapped - swapped).max() <= 1e-12


@pytest.mark.parametrize("inst", [i for _, i in enumeration_cases()[::3] if same_ranks(i)], ids=str)
def test_float_conditional_selection_law_matches_the_exact_integral(inst: Instance):
    """``resispec.verifiers.pooled.plan.selection_probabilities`` (Gauss-Legendre, per candidate) against the
    exact per-candidate integral of ``resispec.theory.pooled.pooling.selection_given``, for every candidate multiset."""
    from resispec.verifiers.pooled.plan import selection_probabilities

    exact, plan = build(inst.p, inst.q, inst.k), float_plan(inst)
    laws = {x: interval_law(exact, x) for x in range(inst.V) if inst.q[x] > 0}
    for tup in itertools.combinations_with_replacement(sorted(laws), inst.k):
        expected = selection_given([laws[x] for x in tup], tup)
        got: dict[int, float] = {}
        for token, probability in zip(tup, selection_probabilities(plan, np.array([tup]))[0].tolist()):
            got[token] = got.get(token, 0.0) + probability
        for y in set(tup):
            assert got.get(y, 0.0) == pytest.approx(float(expected.get(y, 0)), abs=1e-12), (tup, y)
