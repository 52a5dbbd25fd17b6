"""resispec.theory.resispec_wor.resispec_wor: its checkers catch broken rules, plans and duals, and its exact plan,
law and
certificate agree with the float code."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resispec.audit import exact_law
from resispec.bounds_wor import sequential_optimum_wor_lp
from resispec.theory.common.arith import Exact, normalise
from resispec.theory.common.exact import Instance
from resispec.theory.common.sequential import audit, emit
from resispec.theory.resispec_wor.resispec_wor import (
    BELOW_RRS_WOR,
    WORKED,
    FirstTargets,
    certificate_cases,
    clip_identities,
    law_cases,
    plan_cases,
    plan_problems,
    plan_reproduction_problems,
    recursion_problems,
    root_problems,
    scaled_planner,
    step_defect,
    worked_example_problems,
)
from resispec.theory.resispec_wor.resispec_wor import (
    Q_ as Q,
)
from resispec.theory.resispec_wor.wor_lp import (
    Dual,
    certificate,
    certificate_problems,
    classes,
    dual_problems,
    primal_problems,
    rule_masses,
)
from resispec.theory.resispec_wor.wor_shaping import (
    Plan,
    ResiSpecWOR,
    from_accepted,
    latest_first,
    plan_of,
    roots,
    without,
)
from resispec.verifiers.resispec_wor.plan import latest_first_plan

FLOAT = 1e-12
# Every class of the certificate is non-empty: R = {0}, Z = {3}, I = {1, 2}.
P_ = (F(9, 20), F(1, 4), F(1, 5), F(1, 10))
Q_ = (F(1, 5), F(1, 4), F(1, 4), F(3, 10))


def floats(v) -> np.ndarray:
    return np.array([float(x) for x in v])


@pytest.fixture(scope="module")
def plan() -> Plan:
    plan = plan_of(P_, Q_)
    assert all(classes(plan)), classes(plan)
    return plan


def test_the_plan_passes_every_checker(plan):
    assert not plan_problems(plan) and not root_problems(P_, Q_)[0]
    assert not plan_reproduction_problems(plan)
    assert not certificate_problems(P_, Q_, rule_masses(ResiSpecWOR(P_, Q_, 2)), certificate(plan))
    for k in (2, 3, 4):
        assert not recursion_problems(ResiSpecWOR(P_, Q_, k))[0]
        assert not audit(ResiSpecWOR(P_, Q_, k), P_)
    assert not worked_example_problems()


# --- broken recursions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WithoutResidualTerm(ResiSpecWOR):
    """r_x = norm(q_{-x} a_2): drops the (1 - <q_{-x}, a_2>) f term."""

    def reject(self, state, x):
        r, q, n = state
        if n == 1:
            return super().reject(state, x)
        plan = plan_of(r, q)
        return normalise([b * a for b, a in zip(without(q, x), plan.second)]), without(q, x), n - 1


@pytest.mark.parametrize("k", [2, 3])
def test_a_wrong_rejection_target_is_caught(plan, k):
    stale = FirstTargets(P_, Q_, k, first_targets=(P_,) * 4)  # r_x = r: forgets what step 1 took
    for rule in (stale, WithoutResidualTerm(P_, Q_, k)):
        assert any(step_defect(rule, rule.start))
        assert any("r - q' * a" in m for m in recursion_problems(rule)[0])
        assert emit(rule, Exact()).law != P_


def test_the_law_defect_is_the_step_defect(plan):
    targets = tuple(normalise([F(1 + (x + y) % 3) for y in range(4)]) for x in range(4))
    rule = FirstTargets(P_, Q_, 3, first_targets=targets)
    defect = step_defect(rule, rule.start)
    assert any(defect)
    assert tuple(a - b for a, b in zip(emit(rule, Exact()).law, P_)) == defect


def test_an_acceptance_above_one_is_caught():
    doubled = replace(plan_of(P_, Q_), accepted=tuple(2 * a for a in plan_of(P_, Q_).accepted))
    rule = ResiSpecWOR(P_, Q_, 2, planner=lambda r, q: doubled if (r, q) == (P_, Q_) else plan_of(r, q))
    assert any("outside [0, 1]" in m for m in recursion_problems(rule)[0])


def test_any_admissible_step_one_mass_stays_exact():
    for factors in [(F(0),) * 4, (F(1),) * 4, (F(1, 3), F(1), F(0), F(1, 2))]:
        rule = ResiSpecWOR(P_, Q_, 3, scaled_planner(factors))
        assert not recursion_problems(rule)[0] and not audit(rule, P_)


# --- broken plans --------------------------------------------------------------------------------


def test_a_perturbed_plan_is_caught(plan):
    assert any("root" in m for m in plan_problems(replace(plan, total=plan.total + F(1, 50))))
    assert any("root" in m for m in plan_problems(latest_first(P_, Q_, plan.total * F(9, 10))))
    shifted = list(plan.accepted)
    shifted[1] -= F(1, 100)  # an interior token: still admissible, no longer latest first
    perturbed = from_accepted(P_, Q_, shifted, plan.total)
    assert not audit(ResiSpecWOR(P_, Q_, 2, planner=lambda r, q: perturbed), P_)  # exact ...
    assert any("clip(r - C, 0, q)" in m for m in plan_problems(perturbed))  # ... but not latest first
    masses = rule_masses(ResiSpecWOR(P_, Q_, 2, planner=lambda r, q: perturbed))
    assert not primal_problems(P_, Q_, masses)
    assert any("primal" in m for m in certificate_problems(P_, Q_, masses, certificate(plan)))
    assert sum(masses.values()) < plan.acceptance


def test_a_wrong_clip_fails_the_symbolic_case_analysis():
    assert clip_identities() == (True, True)
    assert clip_identities(lambda t: Q - t) == (False, False)  # A = q - t forgets the (1 - q)


def test_roots_form_an_interval_only_when_every_root_accepts_everything():
    p = q = (F(1, 2), F(3, 10), F(1, 5))
    S0, S1 = roots(p, q)
    assert (S0, S1) == (0, F(5, 4))
    problems, interval = root_problems(p, q)
    assert interval and not problems
    assert latest_first(p, q, S1).accepted != q and latest_first(p, q, S1).acceptance == 1
    assert roots(*WORKED)[0] == roots(*WORKED)[1] == F(10, 7)


# --- broken certificates -------------------------------------------------------------------------


def test_an_infeasible_dual_is_caught(plan):
    dual = certificate(plan)
    assert not dual_problems(Q_, dual)
    R, Z, I = classes(plan)  # noqa: E741 (the classes R, Z, I of theory/resispec_wor/wor_lp.py)
    low = replace(dual, lam=tuple(v - F(1, 10) if y in I else v for y, v in enumerate(dual.lam)))
    assert any("column" in m for m in dual_problems(Q_, low))
    no_nu = replace(dual, nu={x: F(0) for x in dual.nu})
    assert any("column" in m for m in dual_problems(Q_, no_nu))
    negative = replace(dual, lam=tuple(-v if y in Z else v for y, v in enumerate(dual.lam)))
    assert any("negative" in m for m in dual_problems(Q_, negative))
    # raising a multiplier keeps feasibility but loses equality with the primal
    high = Dual(dual.lam, {n: v + F(1, 10) for n, v in dual.mu.items()}, dual.nu)
    masses = rule_masses(ResiSpecWOR(P_, Q_, 2))
    assert not dual_problems(Q_, high)
    assert any("primal" in m for m in certificate_problems(P_, Q_, masses, high))


def test_infeasible_masses_are_caught():
    masses = rule_masses(ResiSpecWOR(P_, Q_, 2))
    first = next(n for n in masses if len(n) == 1)
    assert any("node" in m for m in primal_problems(P_, Q_, {**masses, first: Q_[first[0]] + F(1, 10)}))
    second = max((n for n in masses if len(n) == 2), key=masses.get)
    raised = {**masses, second: masses[second] + F(1, 2)}
    assert any("node" in m for m in primal_problems(P_, Q_, raised))
    assert any("< 0" in m for m in primal_problems(P_, Q_, {**masses, second: F(-1)}))


weights = st.lists(st.integers(0, 9), min_size=2, max_size=5)


@settings(max_examples=40, deadline=None)
@given(weights, weights)
def test_certificate_on_random_pairs(wp, wq):
    V = min(len(wp), len(wq))
    wp, wq = wp[:V], wq[:V]
    if sum(wp) == 0 or sum(1 for w in wq if w) < 2:
        return
    p, q = normalise([F(w) for w in wp]), normalise([F(w) for w in wq])
    plan = plan_of(p, q)
    assert not plan_problems(plan) and not root_problems(p, q)[0]
    assert not certificate_problems(p, q, rule_masses(ResiSpecWOR(p, q, 2)), certificate(plan))


# --- against the float code ----------------------------------------------------------------------


def test_exact_plan_matches_the_float_plan():
    """Including the pairs whose roots form an interval: both take the smallest root."""
    for name, inst in plan_cases():
        exact = plan_of(inst.p, inst.q)
        plan = latest_first_plan(floats(inst.p)[None], floats(inst.q)[None])  # one row
        assert plan.acceptance[0] == pytest.approx(float(exact.acceptance), abs=FLOAT), (name, inst)
        assert plan.total[0] == pytest.approx(float(exact.total), abs=1e-9), (name, inst)
        reached = np.array([c > 0 for c in exact.reach])  # a_2 is a convention where C = 0
        for ours, theirs in [(exact.accepted, plan.accepted[0]), (exact.reach, plan.reach[0]),
                             (exact.second, np.where(reached, plan.second[0], 1.0)),
                             (exact.residual, plan.residual[0])]:
            np.testing.assert_allclose(theirs, floats(ours), atol=FLOAT, err_msg=f"{name}, {inst}")
        for x in (x for x, s in enumerate(exact.rejected) if s > 0):
            np.testing.assert_allclose(plan.rejection_target(np.array([x]))[0], floats(exact.rejection_target(x)),
                                       atol=FLOAT)


def test_exact_law_matches_the_float_enumeration():
    for name, inst in law_cases():
        em = emit(ResiSpecWOR(inst.p, inst.q, inst.k), Exact())
        law = exact_law("resispec_wor", floats(inst.p), floats(inst.q), inst.k)
        np.testing.assert_allclose(law.law, floats(em.law), atol=FLOAT, err_msg=f"{name}, {inst}")
        assert law.acceptance == pytest.approx(float(em.acceptance), abs=FLOAT), (name, inst)


def test_certificate_value_matches_the_float_sequential_lp():
    for name, inst in certificate_cases():
        value = certificate(plan_of(inst.p, inst.q)).objective(inst.p, inst.q)
        lp = sequential_optimum_wor_lp(floats(inst.p), floats(inst.q), 2)
        assert lp == pytest.approx(float(value), abs=FLOAT), (name, inst)


def test_the_counterexample_is_below_rrs_wor_in_floats_too():
    p, q, k = floats(BELOW_RRS_WOR.p), floats(BELOW_RRS_WOR.q), BELOW_RRS_WOR.k
    ours, theirs = exact_law("resispec_wor", p, q, k).acceptance, exact_law("rrs_wor", p, q, k).acceptance
    assert ours < theirs - 1e-3
    assert theirs == pytest.approx(2 / 3, abs=FLOAT) == sequential_optimum_wor_lp(p, q, k)


def test_instance_sets_cover_the_corners():
    names = {name for name, _ in plan_cases()}
    assert {"p == q", "worked example", "two tokens", "target off the draft", "ratio ties"} <= names
    assert all(isinstance(inst, Instance) for _, inst in law_cases())
    assert {inst.k for _, inst in law_cases()} == {2, 3, 4}


# --- recursion_exact: "only if" is state by state, not global -----------------------------------


def test_an_exact_rule_can_have_cancelling_defects():
    from resispec.theory.resispec_wor.resispec_wor import CANCELLING, cancelling_problems, step_defect

    problems, defects = cancelling_problems()
    assert problems == []
    assert defects == {1: (F(-1, 24), F(1, 24), F(0)), 2: (F(1, 24), F(-1, 24), F(0))}
    base = ResiSpecWOR(CANCELLING.p, CANCELLING.q, CANCELLING.k)
    assert not any(step_defect(base, base.reject(base.start, 1)))  # the change creates the defects


def test_the_cancelling_check_fails_when_the_defects_do_not_cancel(monkeypatch):
    import resispec.theory.resispec_wor.resispec_wor as wor

    monkeypatch.setattr(wor, "LOWERED_ACCEPTANCE", F(15, 16))  # undo one of the two changes
    problems, _ = wor.cancelling_problems()
    assert any("output law" in m for m in problems) and any("no defect" in m for m in problems)
