"""The k = 2 WOR complementary-slackness lemmas hold by cases, and fail when the certificate or the
case split is broken."""

from __future__ import annotations

import sympy as sp

from theory import wor_k2_lemmas as lemmas


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
    monkeypatch.setattr(lemmas, "multipliers", lambda cls: {**right(cls), "mu": sp.Integer(1)} if cls == "Z" else right(cls))
    assert not lemmas.k2_slackness_lemmas()["A = 0, T > w: mu x reach slack"]
