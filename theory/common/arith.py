"""Three arithmetic backends for writing a verifier rule once.

A rule (see ``resispec.theory.common.sequential``) computes with ``+ - * /`` and asks its backend for ``min``, ``max``
and ``is_zero``.  With ``Exact`` the numbers are ``Fraction``s; with ``Region`` they are SymPy
expressions in the free coordinates of ``p`` and ``q``, and every ``min``/``max`` is resolved to the
argument that wins at a witness point.  Both record the sequence of winners (the *signature*); on the
set of points sharing a signature -- one region of the case analysis -- the resolved expressions are
rational functions that agree with the rule everywhere, so an identity that cancels to zero there
holds on the whole region.  ``OnPiece`` computes in the field ``QQ(t)`` of rational functions of one
variable ``t`` (a parameter such as spectr's ``rho``), resolving each ``min``/``max`` at a rational point
of an interval on which no decision changes; the results, evaluated at any ``t`` of that interval
(an algebraic number included), are the rule's values there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import sympy as sp

Number = Any  # Fraction, int or sympy.Expr


def normalise(v: Sequence[Number]) -> tuple[Number, ...]:
    """``norm(v) = v / sum(v)`` in either backend; the caller guarantees ``sum(v) != 0``."""
    total = sum(v, 0)
    return tuple(x / total for x in v)


class Exact:
    """Exact rational arithmetic; records which argument won each ``min``/``max``."""

    validate = True

    def __init__(self) -> None:
        self.picks: list[int] = []

    def min(self, a: Number, b: Number) -> Number:
        return self._pick(a, b, b < a)

    def max(self, a: Number, b: Number) -> Number:
        return self._pick(a, b, b > a)

    def is_zero(self, a: Number) -> bool:
        return a == 0

    def _pick(self, a: Number, b: Number, second: bool) -> Number:
        self.picks.append(int(second))
        return b if second else a


class Tie(ValueError):
    """The witness lies on a boundary between regions (two branches are equal there but not identically)."""


class Region:
    """SymPy expressions whose ``min``/``max`` are resolved at ``witness`` (a map symbol -> value)."""

    validate = False

    def __init__(self, witness: Mapping[sp.Symbol, Fraction]) -> None:
        self.witness = {s: sp.Rational(v.numerator, v.denominator) for s, v in witness.items()}
        self.picks: list[int] = []

    def value(self, e: Number) -> Fraction:
        """The exact value of ``e`` at the witness."""
        r = sp.sympify(e).xreplace(self.witness)
        return Fraction(int(r.p), int(r.q))

    def min(self, a: Number, b: Number) -> Number:
        return self._pick(a, b, lambda va, vb: vb < va)

    def max(self, a: Number, b: Number) -> Number:
        return self._pick(a, b, lambda va, vb: vb > va)

    def is_zero(self, a: Number) -> bool:
        if self.value(a) != 0:
            return False
        if sp.cancel(sp.sympify(a)) != 0:
            raise Tie(f"{a} vanishes at the witness but not identically")
        return True

    def _pick(self, a: Number, b: Number, second_wins: Any) -> Number:
        va, vb = self.value(a), self.value(b)
        if va == vb and sp.cancel(sp.sympify(a) - sp.sympify(b)) != 0:
            raise Tie(f"{a} and {b} tie at the witness")
        second = second_wins(va, vb)
        self.picks.append(int(second))
        return b if second else a


class OnPiece:
    """Rational functions of one variable ``t`` (``sympy.polys.fields``, fast exact arithmetic); every
    ``min``/``max`` is resolved at the rational ``point`` (a tie there between different functions
    raises ``Tie``).  Build constants with ``constant`` and the variable with ``variable``."""

    validate = False

    def __init__(self, point: Fraction) -> None:
        from sympy.polys.fields import field

        self.field, self.variable = field("t", sp.QQ)
        self.point = sp.QQ(point.numerator, point.denominator)
        self.picks: list[int] = []

    def constant(self, v: Fraction) -> Any:
        return self.field(sp.QQ(v.numerator, v.denominator))

    def value(self, e: Any) -> Any:
        """``e`` at ``point`` (an element of ``QQ``)."""
        e = self.field(e)
        t = e.numer.ring.gens[0]
        return e.numer.evaluate(t, self.point) / e.denom.evaluate(t, self.point)

    def min(self, a: Number, b: Number) -> Number:
        return self._pick(a, b, lambda va, vb: vb < va)

    def max(self, a: Number, b: Number) -> Number:
        return self._pick(a, b, lambda va, vb: vb > va)

    def is_zero(self, a: Number) -> bool:
        return self.field(a) == 0

    def _pick(self, a: Number, b: Number, second_wins: Any) -> Number:
        va, vb = self.value(a), self.value(b)
        if va == vb and self.field(a) != self.field(b):
            raise Tie(f"{a} and {b} tie at t = {self.point}")
        second = second_wins(va, vb)
        self.picks.append(int(second))
        return b if second else a
