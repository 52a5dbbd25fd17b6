"""Two arithmetic backends for writing a verifier rule once.

A rule (see ``theory.sequential``) computes with ``+ - * /`` and asks its backend for ``min``, ``max``
and ``is_zero``.  With ``Exact`` the numbers are ``Fraction``s; with ``Region`` they are SymPy
expressions in the free coordinates of ``p`` and ``q``, and every ``min``/``max`` is resolved to the
argument that wins at a witness point.  Both record the sequence of winners (the *signature*); on the
set of points sharing a signature -- one region of the case analysis -- the resolved expressions are
rational functions that agree with the rule everywhere, so an identity that cancels to zero there
holds on the whole region.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping, Sequence

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
