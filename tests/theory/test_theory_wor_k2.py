"""The k = 2 WOR complementary-slackness lemmas hold by cases, and fail when the certificate or the
case split is broken."""

from __future__ import annotations

import sympy as sp

from resispec.theory.resispec_wor import wor_k2_lemmas as lemmas


def test_every_case_lemma_holds() -> None:
    results = lemmas.k2_slackness_lemmas()
    assert not [name for name, ok in results.items() if not ok]
    assert "A = 0, T > w: A = 0 implies r <= C" in results


def test_a_gap_in_the_ranges_is_caught(monkeypatch) -> None:
    monkeypatch.setattr(lemmas, "T_RANGES", (("A = q", -sp.oo, 0), ("A = 0", lemmas.W_, sp.oo)))
    assert lemmas.cover_problems() == ["gap between A = q and A = 0"]


def test_a_wrong_class_is_caught(monkeypatch) -> None:
    cases = dict(lemmas.TOKEN_CASES, **{"A = 0, T > w": (lemmas.W_ + lemmas.DPOS, "I")})
    monkeypatch.setattr(lemmas, "TOKEN_CASES", cases)
    assert not lemmas.k2_slackness_lemmas()["A = 0, T > w: class I"]


def test_a_wrong_multiplier_breaks_slackness(monkeypatch) -> None:
    """mu = 1 on Z: step 2 has spare capacity there, so the reach product is not 0."""
    right = lemmas.multipliers
    monkeypatch.setattr(lemmas, "multipliers",
                        lambda cls: {**right(cls), "mu": sp.Integer(1)} if cls == "Z" else right(cls))
    assert not lemmas.k2_slackness_lemmas()["A = 0, T > w: mu x reach slack"]


def test_the_rest_of_the_chain_holds() -> None:
    for group in (lemmas.model_lemmas, lemmas.second_step_lemmas, lemmas.feasibility_lemmas, lemmas.lagrangian_lemmas):
        assert all(group().values()), group.__name__


def test_feasibility_needs_the_other_tokens_t(monkeypatch) -> None:
    """With S below the token's own t (sigma < 0), C = q (S - t) can be negative: the check sees it."""
    monkeypatch.setattr(lemmas, "SIGMA", -sp.Symbol("s", positive=True))
    assert not all(lemmas.feasibility_lemmas().values())


def test_the_lagrangian_check_sees_a_wrong_column(monkeypatch) -> None:
    """Dropping nu from the m(x) column leaves sum_x nu m1 uncancelled."""
    monkeypatch.setattr(lemmas, "m1_column_own", lambda: lemmas.LAMBDA(lemmas._x) - 1)
    assert not all(lemmas.lagrangian_lemmas().values())
