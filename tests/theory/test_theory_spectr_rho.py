"""spectr at rho* itself: rho* is computed as an algebraic number, the rule is exact there, and the
check fails for a rho that is not rho*."""

from __future__ import annotations

import dataclasses

import sympy as sp

from resispec.theory.common.exact import from_weights
from resispec.theory.spectr import spectr

P, Q, K = from_weights(5, 3, 2), from_weights(2, 3, 5), 3


def test_rho_star_is_an_irrational_root_and_the_rule_is_exact_there() -> None:
    star = spectr.rho_star_algebraic(P, Q, K)
    assert star is not None and star.minimal.degree() >= 2
    lo, hi = spectr.rho_star(P, Q, K)
    a, b = star.interval
    assert lo <= star.lo <= a <= b <= star.hi <= hi
    assert spectr.at_rho_star_problems(P, Q, K) == ([], star.minimal.degree())


def test_rho_star_one_is_checked_in_rationals() -> None:
    assert spectr.rho_star_algebraic(P, P, K) is None
    assert spectr.at_rho_star_problems(P, P, K) == ([], 0)


def test_a_wrong_rho_is_caught(monkeypatch) -> None:
    """The upper end of the bracket is not rho*: the test is not tight there and c(rho) != rho."""
    right = spectr.rho_star_algebraic(P, Q, K)
    hi = right.hi
    at_hi = sp.Poly(spectr.T_VAR - sp.Rational(hi.numerator, hi.denominator), spectr.T_VAR)
    wrong = dataclasses.replace(right, minimal=at_hi, interval=(hi, hi))
    monkeypatch.setattr(spectr, "rho_star_algebraic", lambda p, q, k: wrong)
    problems, _ = spectr.at_rho_star_problems(P, Q, K)
    assert "c(rho*) != rho*" in problems
