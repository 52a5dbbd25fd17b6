"""The theory suite passes, its committed docs are current, and its checkers catch broken claims."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from fractions import Fraction as F

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from resispec import theory
from resispec.theory.bounds.iid_optimum import alpha_star
from resispec.theory.common.arith import Exact, normalise
from resispec.theory.common.exact import Instance
from resispec.theory.common.sequential import audit, emit, exactness_problems
from resispec.theory.common.symbolic import by_cases, region_search
from resispec.theory.controls.resispec_paper import CE, PaperRule, even, reconstruction
from resispec.theory.registry import Outcome, Theorem
from resispec.theory.rejection.rrs_wor import SPSChainWOR
from resispec.theory.rejection.sps import SIGN_CASES, SPSChain
from resispec.theory.report import DOCS_PATH, render, run_all, run_one
from resispec.theory.resispec.resispec import ResiSpec
from resispec.theory.resispec.resispec import cases as resispec_cases
from resispec.theory.resispec.schedule import Curve, from_thresholds, schedule
from resispec.theory.resispec.seqlp import certificate_problems
from resispec.theory.sequence.tree import BIASED_RULE, Model, tree_law
from resispec.theory.spectr.spectr import SpecTr, rho_star
from resispec.theory.topk.topk import TopK

P, Q = sp.symbols("p q", positive=True)
GENERIC = Instance((F(1, 2), F(1, 3), F(1, 6)), (F(1, 6), F(1, 3), F(1, 2)), 2)


ONE_WORKER = pytest.mark.xdist_group("theory-run")
"""On one xdist worker: the tests sharing the module fixture ``results`` (computed once, not once per worker)."""


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return run_all(tmp_path_factory.mktemp("docs") / "theory.md", echo=False)


@pytest.mark.slow
@ONE_WORKER
def test_every_theorem_passes(results):
    failed = [r.theorem.name for r in results if not r.outcome.passed]
    assert not failed, failed
    assert len(results) >= 16


@pytest.mark.slow
@ONE_WORKER
def test_committed_docs_are_current(results):
    assert DOCS_PATH.read_text() == render(results), "run `python -m resispec.theory` and commit docs/theory.md"


def test_exit_status_is_zero_iff_all_pass(monkeypatch, tmp_path):
    def fake(passed: bool) -> Theorem:
        return Theorem("fake.claim", "a claim", "exact rational arithmetic", lambda: Outcome(passed, "", ""))

    monkeypatch.setattr("resispec.theory.report.all_theorems", lambda: [fake(True)])
    assert theory.main(["--no-docs", "--no-coq"]) == 0
    monkeypatch.setattr("resispec.theory.report.all_theorems", lambda: [fake(True), fake(False)])
    assert theory.main(["--docs", str(tmp_path / "t.md"), "--no-coq"]) == 1
    assert "Result: FAIL." in (tmp_path / "t.md").read_text()


def test_a_family_that_declares_no_label_gets_the_default_one(tmp_path):
    from resispec.theory.registry import HAND, LABELS

    theorem = Theorem("new.claim", "a claim", "exact rational arithmetic", lambda: Outcome(True, "", ""))
    assert theorem.label == HAND and HAND in LABELS
    text = render([run_one(theorem)])
    assert f"| [`new.claim`](#newclaim) | {HAND} |" in text and f"**Proof.** {HAND}." in text


@pytest.mark.slow
@ONE_WORKER
def test_every_label_is_a_known_one(results):
    from resispec.theory.registry import LABELS

    assert {r.theorem.label for r in results} <= set(LABELS)


def test_without_coqc_the_run_prints_why_it_skipped(monkeypatch, capsys):
    monkeypatch.setattr("resispec.theory.report.all_theorems", lambda: [])
    monkeypatch.setattr("resispec.theory.formal.coqc", lambda: None)
    assert theory.main(["--no-docs"]) == 0
    assert "SKIP  coq  coqc absent" in capsys.readouterr().out


def test_a_crashing_check_is_a_fail():
    result = run_one(Theorem("crash", "s", "m", lambda: 1 / 0))
    assert result.status == "FAIL" and "ZeroDivisionError" in result.outcome.checked


def test_cli_command_calls_the_suite(monkeypatch):
    from resispec.cli import theory as cli

    seen = []
    monkeypatch.setattr("resispec.theory.main", lambda argv: seen.append(argv) or 7)
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["theory", "--no-docs"])
    assert args.handler(args) == 7 and seen == [["--no-docs"]]


# --- the checkers must be able to fail -----------------------------------------------------------


def test_exact_law_check_catches_the_published_rule():
    em = emit(PaperRule(CE.p, CE.q, 1, reconstruction), Exact())
    assert em.law == (F(2, 5), F(12, 25), F(3, 25))
    assert exactness_problems(em, CE.p)
    assert emit(PaperRule(CE.p, CE.q, 1, even), Exact()).law == (F(2, 5), F(2, 5), F(1, 5))


@dataclass(frozen=True)
class StaleResidual(SPSChain):
    """rrs that forgets to update its residual after a rejection (biased)."""

    def reject(self, r, x):
        return r


def test_region_check_catches_a_biased_rule():
    def defect(ar, p, q):
        return [a - b for a, b in zip(emit(StaleResidual(p, q, 2, ar), ar).law, p)]

    report = region_search(defect, V=3, samples=200, seed=1)
    assert report.failures


def test_case_analysis_rejects_a_false_identity():
    assert not by_cases(sp.Min(P, Q) + sp.Max(Q - P, 0) - P, SIGN_CASES)
    assert not by_cases(Q * sp.Min(1, P / Q) - P, SIGN_CASES)


def test_certificate_rejects_a_perturbed_schedule():
    p, q, k = GENERIC.p, GENERIC.q, GENERIC.k
    sched = schedule(p, q, k)
    assert sched.z > 0 and not certificate_problems(p, q, sched)
    for factor in (F(9, 10), F(11, 10)):
        perturbed = from_thresholds(Curve(p, q), tuple(t * factor for t in sched.T))
        assert certificate_problems(p, q, perturbed)


def test_infeasible_thresholds_break_the_acceptance_bound():
    p, q = GENERIC.p, GENERIC.q
    T = (F(5, 2), F(0))  # T_1 - T_2 = 5/2 > R_1 = 1
    assert any("outside [0, 1]" in m for m in audit(ResiSpec(p, q, T, Exact()), p))


def test_spectr_below_rho_star_is_caught():
    p, q, k = GENERIC.p, GENERIC.q, 3
    lo, hi = rho_star(p, q, k)
    assert lo < hi
    assert audit(SpecTr(p, q, k, lo, Exact()), p)
    assert not audit(SpecTr(p, q, k, hi, Exact()), p)


def test_tree_check_catches_a_biased_node_verifier():
    model = Model(V=3, depth=2, seed=5)
    assert tree_law(model, BIASED_RULE, 2) != model.target((), 3)


# --- properties ------------------------------------------------------------------------------------

weights = st.lists(st.integers(0, 9), min_size=2, max_size=5)


@settings(max_examples=40, deadline=None)
@given(weights, weights, st.integers(1, 3))
def test_resispec_is_exact_and_certified_optimal(wp, wq, k):
    V = min(len(wp), len(wq))
    wp, wq = wp[:V], wq[:V]
    if sum(wp) == 0 or sum(wq) == 0:
        return
    p, q = normalise([F(w) for w in wp]), normalise([F(w) for w in wq])
    sched = schedule(p, q, k)
    assert not audit(ResiSpec(p, q, sched.T, Exact()), p)
    assert not certificate_problems(p, q, sched)
    assert emit(SPSChain(p, q, k, Exact()), Exact()).acceptance <= sched.acceptance


# --- cross-checks of the float implementation (resispec package) against the exact values ---------

EXACT_RULES = {
    "rrs": lambda i: SPSChain(i.p, i.q, i.k, Exact()),
    "rrs_wor": lambda i: SPSChainWOR(i.p, i.q, i.k, Exact()),
    "spectr": lambda i: SpecTr(i.p, i.q, i.k, rho_star(i.p, i.q, i.k)[1], Exact()),
    "topk": lambda i: TopK(i.p, i.q, i.k, Exact()),
    "resispec": lambda i: ResiSpec(i.p, i.q, schedule(i.p, i.q, i.k).T, Exact()),
    "resispec_paper": lambda i: PaperRule(i.p, i.q, i.k, reconstruction),
}
CROSS = [
    i for i in resispec_cases()[::3] if i.k <= sum(1 for v in i.q if v > 0) and i.k <= i.V
]


def floats(law):
    return np.array([float(v) for v in law])


@pytest.mark.parametrize("inst", CROSS, ids=str)
def test_float_schedule_and_bounds_match_the_exact_ones(inst):
    from resispec.bounds import optimal_acceptance, sequential_optimum_lp
    from resispec.verifiers.resispec.plan import schedule as float_schedule

    exact = schedule(inst.p, inst.q, inst.k)
    p, q = floats(inst.p), floats(inst.q)
    fs = float_schedule(p, q, inst.k)
    assert fs.z == pytest.approx(float(exact.z), abs=1e-9)
    if exact.z > 0:  # with z = 0 the thresholds need not be unique (theorem resispec.fixed_point)
        assert np.allclose(fs.T, floats(exact.T), atol=1e-8) and np.allclose(fs.R, floats(exact.R), atol=1e-8)
    assert sequential_optimum_lp(p, q, inst.k) == pytest.approx(float(exact.acceptance), abs=1e-8)
    assert optimal_acceptance(p, q, inst.k) == pytest.approx(float(alpha_star(inst.p, inst.q, inst.k)), abs=1e-12)


@pytest.mark.parametrize("name", sorted(EXACT_RULES))
def test_float_verifiers_have_the_exact_laws(name):
    from resispec.enumeration import enumerate_law
    from resispec.verifiers import get_verifier

    for inst in CROSS:
        em = emit(EXACT_RULES[name](inst), Exact())
        law = enumerate_law(get_verifier(name).bind(floats(inst.p), floats(inst.q), inst.k))
        assert np.allclose(law.law, floats(em.law), atol=1e-9), (name, str(inst))
        assert law.acceptance == pytest.approx(float(em.acceptance), abs=1e-8), (name, str(inst))
