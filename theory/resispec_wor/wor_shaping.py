"""The k = 2 latest-first plan in exact rationals, and resispec_wor's recursion as a sequential rule
(the float twins are ``resispec/verifiers/resispec_wor/plan.py`` and ``resispec/verifiers/resispec_wor/rule.py``).

Built from ``docs/resispec_wor.md`` alone, without the float code, so that the two can be compared.
Target ``r``, draft ``q`` (at least two drafted tokens), two candidates without replacement:

1. **Fixed point.** For drafted ``x``, ``t_x(S) = clip(q_x (1 + S) - r_x, 0, q_x / (1 - q_x))``
   (0 off the draft) and ``G(S) = S - sum_x t_x(S)``: continuous, non-decreasing and linear between
   the kinks ``lo_x = r_x / q_x - 1`` and ``hi_x = lo_x + 1 / (1 - q_x)``. The plan is taken at the
   smallest root ``S`` (``resispec.theory.pooled.pooling.level``: exact interpolation on the piece that reaches 0).
2. **Step 1.** ``A_x = q_x - t_x (1 - q_x)``: the latest-first accepted mass; ``s_x = q_x - A_x``.
3. **From A on, by definition** (so that any admissible ``A`` can be fed in): step-2 reach
   ``C(y) = sum_{x != y} s_x q_y / (1 - q_x)``, step-2 acceptance ``a_2 = min(1, (r - A) / C)`` (1 where
   ``C = 0``), unnormalised final residual ``f = (r - A - C)+``.
4. **After rejecting x**: the target ``r_x = q_{-x} a_2 + (1 - <q_{-x}, a_2>) norm(f)`` (``q_{-x}``: q with
   x removed, renormalised; the second term only when ``f != 0``).

The recursion (``ResiSpecWOR``): state ``(r, q', n)``; with ``n >= 2`` accept x w.p. ``A_x / q'_x`` of
the plan of ``(r, q')`` and move to ``(r_x, q'_{-x}, n - 1)``; with ``n = 1`` the rrs_wor step (sps
against ``(r, q')``); with ``n = 0`` emit from ``r``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache

from resispec.theory.common.arith import Exact, normalise
from resispec.theory.common.exact import Law, pos
from resispec.theory.pooled.pooling import level
from resispec.theory.rejection.sps import accept_probability, next_residual

ZERO, ONE = Fraction(0), Fraction(1)


def without(q: Law, x: int) -> Law:
    """``q_{-x}``: ``q`` with token ``x`` removed and renormalised (left at zero when nothing is left)."""
    rest = tuple(ZERO if y == x else v for y, v in enumerate(q))
    return normalise(rest) if any(rest) else rest


def rising(r: Law, q: Law, S: Fraction) -> Law:
    """``t(S)``: ``clip(q_x (1 + S) - r_x, 0, q_x / (1 - q_x))`` per drafted token, 0 off the draft."""
    return tuple(min(max(b * (1 + S) - a, ZERO), b / (1 - b)) if b else ZERO for a, b in zip(r, q))


def excess(r: Law, q: Law, S: Fraction) -> Fraction:
    """``G(S) = S - sum_x t_x(S)``."""
    return S - sum(rising(r, q, S), ZERO)


def kinks(r: Law, q: Law) -> list[Fraction]:
    """The positive breakpoints of ``G``: ``lo_x = r_x / q_x - 1`` and ``hi_x = lo_x + 1 / (1 - q_x)``."""
    points = set()
    for a, b in zip(r, q):
        if b:
            lo = a / b - 1
            points |= {lo, lo + 1 / (1 - b)}
    return sorted(v for v in points if v > 0)


def roots(r: Law, q: Law) -> tuple[Fraction, Fraction]:
    """``(S0, S1)``: the least and the greatest root of ``G`` (its roots are the interval between)."""
    def G(S: Fraction) -> Fraction:
        return excess(r, q, S)

    breaks = kinks(r, q)
    first = level(G, breaks, ZERO)
    return first, max([first] + [b for b in breaks if b > first and G(b) == 0])


@dataclass(frozen=True)
class Plan:
    """A k = 2 plan for target ``r`` and draft ``q``: step-1 accepted mass ``accepted`` (A), step-2 reach
    ``reach`` (C), step-2 acceptance ``second`` (a_2) and the unnormalised final residual ``residual``
    (f), all by token id; ``total`` is the root S it was built at (None when A was given)."""

    r: Law
    q: Law
    accepted: Law
    reach: Law
    second: Law
    residual: Law
    total: Fraction | None = None

    @property
    def rejected(self) -> Law:
        """``s = q - A``."""
        return tuple(b - a for a, b in zip(self.accepted, self.q))

    @property
    def acceptance(self) -> Fraction:
        """``sum A + sum min(r - A, C)``."""
        return sum(self.accepted, ZERO) + sum((c * a for c, a in zip(self.reach, self.second)), ZERO)

    def first_acceptance(self, x: int) -> Fraction:
        """``A_x / q_x``."""
        return self.accepted[x] / self.q[x]

    def rejection_target(self, x: int) -> Law:
        """``r_x = q_{-x} a_2 + (1 - <q_{-x}, a_2>) norm(f)``."""
        proposal = without(self.q, x)
        law = [b * a for b, a in zip(proposal, self.second)]
        mass = sum(self.residual, ZERO)
        if mass:
            missed = 1 - sum(law, ZERO)
            law = [v + missed * f / mass for v, f in zip(law, self.residual)]
        return tuple(law)


def from_accepted(r: Law, q: Law, accepted: Sequence[Fraction], total: Fraction | None = None) -> Plan:
    """The plan with step-1 mass ``accepted`` (A) and everything else derived from it (module docstring,
    step 3): exact for every ``0 <= A <= min(r, q)``."""
    V = len(r)
    s = [b - a for a, b in zip(accepted, q)]
    reach = tuple(q[y] * sum((s[x] / (1 - q[x]) for x in range(V) if x != y), ZERO) for y in range(V))
    left = [a - b for a, b in zip(r, accepted)]
    second = tuple(min(ONE, u / c) if c else ONE for u, c in zip(left, reach))
    residual = tuple(pos(u - c) for u, c in zip(left, reach))
    return Plan(tuple(r), tuple(q), tuple(accepted), reach, second, residual, total)


def latest_first(r: Law, q: Law, S: Fraction | None = None) -> Plan:
    """The latest-first plan at the root ``S`` of ``G`` (default: the smallest root)."""
    S = roots(r, q)[0] if S is None else S
    accepted = tuple(b - t * (1 - b) for b, t in zip(q, rising(r, q, S)))
    return from_accepted(r, q, accepted, S)


@cache
def plan_of(r: Law, q: Law) -> Plan:
    """The latest-first plan of ``(r, q)`` (memoised: the recursion asks for it per state)."""
    return latest_first(r, q)


State = tuple[Law, Law, int]  # (target r, draft q' over the undrawn tokens, candidates left)
Planner = Callable[[Law, Law], Plan]


@dataclass(frozen=True)
class ResiSpecWOR:
    """resispec_wor as a ``resispec.theory.common.sequential`` rule with WOR drafting (module docstring); ``planner``
    builds the k = 2 plan of each state (default: latest first; any admissible plan keeps it exact)."""

    p: Law
    q: Law
    k: int
    planner: Planner = plan_of

    @property
    def start(self) -> State:
        return tuple(self.p), tuple(self.q), self.k

    def draft(self, state: State) -> Law:
        return state[1]

    def accept(self, state: State, x: int) -> Fraction:
        r, q, n = state
        if n == 1:
            return accept_probability(Exact(), r[x], q[x])
        return self.planner(r, q).first_acceptance(x)

    def reject(self, state: State, x: int) -> State:
        r, q, n = state
        target = next_residual(Exact(), r, q) if n == 1 else self.planner(r, q).rejection_target(x)
        return target, without(q, x), n - 1

    def residual(self, state: State) -> Law:
        return state[0]
