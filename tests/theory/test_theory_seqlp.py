"""The symbolic lemmas of resispec's sequential-LP optimality proof hold, and fail when broken."""

from __future__ import annotations

import sympy as sp

from resispec.theory.resispec import seqlp_lemmas as lemmas


def test_every_lemma_holds() -> None:
    for group in (lemmas.model_lemmas, lemmas.dual_lemmas, lemmas.slackness_lemmas, lemmas.lagrangian_lemmas):
        failed = [name for name, ok in group().items() if not ok]
        assert not failed, f"{group.__name__}: {failed}"


def test_slackness_fails_for_a_wrong_dual() -> None:
    """mu = 0 on the classes above the step makes lambda_j > 0 where the step accepts less than its
    capacity, and mu = u_j below it breaks the recursion's min."""
    wrong = dict(lemmas.CERTIFICATE_MU, **{"class c > j": sp.Integer(0)})
    assert not lemmas.slackness_lemmas(wrong)["(c) class c > j: (2) lambda_j (R_j q - m_j)"]
    wrong = dict(lemmas.CERTIFICATE_MU, **{"class 1 <= c < j": lemmas.UJ + lemmas.DU})
    assert not lemmas.slackness_lemmas(wrong)["(c) class 1 <= c < j: min(u_j, mu)"]


def test_orderings_are_checked(monkeypatch) -> None:
    """A parametrisation that breaks its ordering (rho below T_{j+1} in the class-0 case) is caught."""
    broken = lemmas.orders()
    broken["class 0 (rho > T_1)"][lemmas.RHO] = sp.Symbol("t", nonnegative=True) - lemmas.E_
    monkeypatch.setattr(lemmas, "orders", lambda: broken)
    assert not lemmas.realises("class 0 (rho > T_1)")
    assert all(lemmas.realises(name) for name in lemmas.ORDERINGS if name != "class 0 (rho > T_1)")


def test_lagrangian_check_sees_a_missing_exchange(monkeypatch) -> None:
    """Without the triangle exchange E(k) the gap D - P - products does not cancel."""
    monkeypatch.setattr(lemmas, "exchange", lambda n: sp.Integer(0))
    assert not lemmas.lagrangian_lemmas()["(l) D - P - products = E(k)"]


def test_exchange_vanishes_at_small_k() -> None:
    for n in range(1, 5):
        assert sp.expand(lemmas.exchange(n).doit()) == 0
