"""The resispec threshold schedule in exact rationals.

``g(s) = sum_x min(p(x), s q(x))`` and ``h(s) = s - g(s) = sum_x (s q(x) - p(x))+`` are piecewise linear
with breakpoints at the ratios ``p/q`` (tokens with ``q = 0`` never enter).  ``h`` is zero up to the
smallest ratio and strictly increasing after it, so ``h_inv(y)``, the largest ``s`` with ``h(s) = y``, is
well defined and piecewise linear.  For a given ``z`` the tight thresholds are computed backwards,
``T_k = h_inv(z)``, ``T_j = h_inv(z + T_{j+1})``, and ``z`` is the root of ``F(z) = z + g(T_1(z)) = 1``
(``F = R_1``, strictly increasing and continuous).  ``F`` is piecewise linear, so the root is found
exactly: bisection, plus a step along ``F``'s exact right derivative that lands on the root once the
lower end of the bracket lies on the linear piece that reaches it.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from resispec.theory.common.exact import Law


@dataclass(frozen=True)
class Curve:
    """``g`` and ``h`` of a pair ``(p, q)``."""

    p: Law
    q: Law

    @property
    def ratios(self) -> list[Fraction]:
        """The distinct breakpoints ``p/q`` (tokens with ``q > 0``), ascending."""
        return sorted({a / b for a, b in zip(self.p, self.q) if b > 0})

    def g(self, s: Fraction) -> Fraction:
        return sum((min(a, s * b) for a, b in zip(self.p, self.q)), Fraction(0))

    def h(self, s: Fraction) -> Fraction:
        return s - self.g(s)

    def h_slope(self, s: Fraction) -> Fraction:
        """Right derivative of ``h`` at ``s``: the draft mass with ratio ``<= s``."""
        return sum((b for a, b in zip(self.p, self.q) if b > 0 and a <= s * b), Fraction(0))

    def g_slope(self, s: Fraction) -> Fraction:
        """Right derivative of ``g`` at ``s``: the draft mass with ratio ``> s``."""
        return 1 - self.h_slope(s)

    def h_inv(self, y: Fraction) -> Fraction:
        """The largest ``s`` with ``h(s) = y`` (``y >= 0``); exact, by the linear piece containing it."""
        ratios = self.ratios
        i = max(i for i, b in enumerate(ratios) if self.h(b) <= y)
        return ratios[i] + (y - self.h(ratios[i])) / self.h_slope(ratios[i])


@dataclass(frozen=True)
class Schedule:
    """Thresholds ``T = (T_1..T_k)`` (``T_{k+1} = 0``), reach probabilities ``R = (R_1..R_k)`` with
    ``R_j = 1 - g(T_1) + g(T_j)``, and the rejection probability ``z = 1 - g(T_1)``."""

    T: tuple[Fraction, ...]
    R: tuple[Fraction, ...]
    z: Fraction

    @property
    def acceptance(self) -> Fraction:
        return 1 - self.z


def from_thresholds(curve: Curve, T: tuple[Fraction, ...]) -> Schedule:
    """The schedule of any thresholds, with ``R`` derived from them (never solved for)."""
    z = 1 - curve.g(T[0])
    return Schedule(tuple(T), tuple(z + curve.g(t) for t in T), z)


def tight_thresholds(curve: Curve, z: Fraction, k: int) -> tuple[Fraction, ...]:
    """``T_k = h_inv(z)``, ``T_j = h_inv(z + T_{j+1})``: every constraint ``T_j - T_{j+1} <= R_j`` tight."""
    T = [curve.h_inv(z)]
    for _ in range(k - 1):
        T.append(curve.h_inv(z + T[-1]))
    return tuple(reversed(T))


def reach_one(curve: Curve, z: Fraction, k: int) -> tuple[Fraction, Fraction]:
    """``F(z) = z + g(T_1(z))`` and its exact right derivative."""
    T = tight_thresholds(curve, z, k)
    dT = Fraction(0)
    for t in reversed(T):  # T_k first: dT_j/dz = (1 + dT_{j+1}/dz) / h'(T_j)
        dT = (1 + dT) / curve.h_slope(t)
    return z + curve.g(T[0]), 1 + curve.g_slope(T[0]) * dT


def schedule(p: Law, q: Law, k: int) -> Schedule:
    """The optimal (tight, fixed-point) resispec schedule of ``(p, q, k)``, exactly."""
    curve = Curve(p, q)
    lo, hi = Fraction(0), Fraction(1)
    F_lo, slope = reach_one(curve, lo, k)
    if F_lo >= 1:  # g(T_1(0)) = 1: everything is accepted, z = 0
        return from_thresholds(curve, tight_thresholds(curve, lo, k))
    while True:
        step = lo + (1 - F_lo) / slope
        if step <= hi and reach_one(curve, step, k)[0] == 1:
            return from_thresholds(curve, tight_thresholds(curve, step, k))
        mid = (lo + hi) / 2
        F_mid, slope_mid = reach_one(curve, mid, k)
        if F_mid == 1:
            return from_thresholds(curve, tight_thresholds(curve, mid, k))
        if F_mid < 1:
            lo, F_lo, slope = mid, F_mid, slope_mid
        else:
            hi = mid
