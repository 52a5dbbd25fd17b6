"""The resispec schedule: thresholds ``T_1 >= ... >= T_k``, reach probabilities and ``z``.

Step j of resispec accepts candidate x with probability
``a_j(x) = [min(p, T_j q) - min(p, T_{j+1} q)](x) / (R_j q(x))``, ``T_{k+1} = 0``, where
``R_j = 1 - g(T_1) + g(T_j)`` is the probability of reaching step j and ``g(s) = sum min(p, s q)``.
Any non-increasing thresholds with ``T_j - T_{j+1} <= R_j`` give an exact verifier (the accepted
mass telescopes to ``min(p, T_1 q)``, the residual adds ``(p - T_1 q)+``). The best ones make every
constraint tight, ``h(T_j) = z + T_{j+1}`` with ``h(s) = s - g(s)``: for a given ``z`` this fixes
``T_k = h^{-1}(z)``, ``T_{k-1} = h^{-1}(z + T_k)``, ..., ``T_1``, and ``z`` solves
``z = 1 - g(T_1(z))`` (``z - 1 + g(T_1(z))`` is increasing, so the root is unique).

Solving: every ``T_j(z)`` is concave and increasing in z (``h^{-1}`` is, and compositions keep it),
so ``d(z) = z - 1 + g(T_1(z))`` is concave, increasing and piecewise linear. Newton's method from
``z = 0`` (where ``d <= 0``) solves the linear equation on the pieces of the current z; by concavity
that root never passes the true one, so every iterate is feasible (``z <= 1 - g(T_1(z))``), and on
finitely many pieces it stops at the exact root. ``R_j`` is then derived from the thresholds as
``1 - g(T_1) + g(T_j)``, which keeps ``T_j - T_{j+1} <= R_j``: imprecision can only cost
acceptance, never exactness.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from resispec.ratio_profile import RatioProfile
from resispec.validation import as_count, as_pair

MAX_NEWTON_STEPS = 64


@dataclass(frozen=True)
class Schedule:
    """Thresholds ``T`` (``T_1..T_k``), reach probabilities ``R`` (``R_1..R_k``), all-reject ``z``.

    ``acceptance = g(T_1) = 1 - z``.
    """

    T: np.ndarray
    R: np.ndarray
    z: float

    @property
    def acceptance(self) -> float:
        return 1.0 - self.z


def schedule(p: np.ndarray, q: np.ndarray, k: int) -> Schedule:
    """The optimal resispec schedule for target ``p``, draft ``q`` (shape (V,)) and k candidates."""
    p_array, q_array = as_pair(p, q)
    return schedule_from_profile(RatioProfile(p_array, q_array), as_count(k))


@dataclass(frozen=True)
class _Point:
    """The tight thresholds ``T`` (``T_1..T_k``) for one z, and the pieces involved.

    ``pieces[j-1]`` is the piece of the inversion that gave ``T_j``; ``pieces[k]`` is g's piece at
    ``T_1``; ``accepted = g(T_1)``.
    """

    z: float
    T: list[float]
    pieces: list[int]
    accepted: float

    @property
    def feasible(self) -> bool:
        return self.z <= max(1.0 - self.accepted, 0.0)


def _at(profile: RatioProfile, z: float, k: int) -> _Point:
    """``T_k = h^{-1}(z)``, ``T_j = h^{-1}(z + T_{j+1})`` (kept non-increasing) and ``g(T_1)``."""
    h_at_ratio, ratio = profile.h_at_ratio, profile.ratio
    p_prefix, q_prefix = profile.p_prefix, profile.q_prefix
    thresholds, pieces = [0.0] * k, [0] * (k + 1)
    below = 0.0
    for j in range(k - 1, -1, -1):
        target = z + below
        i = int(h_at_ratio.searchsorted(target, side="right"))
        below = thresholds[j] = max((target + p_prefix[i]) / q_prefix[i], ratio[i - 1], below)
        pieces[j] = i
    m = pieces[k] = int(ratio.searchsorted(thresholds[0], side="right"))
    accepted = p_prefix[m] + thresholds[0] * (q_prefix[-1] - q_prefix[m])
    return _Point(z=z, T=thresholds, pieces=pieces, accepted=float(accepted))


def _root_on_pieces(profile: RatioProfile, pieces: list[int], k: int) -> float:
    """Root of ``z = 1 - g(T_1(z))`` with every map on the given pieces (a Newton step).

    On fixed pieces ``T_j = alpha_j z + beta_j`` with ``alpha_k = 1/Q_{i_k}``,
    ``beta_k = P_{i_k}/Q_{i_k}``, ``alpha_j = (1 + alpha_{j+1})/Q_{i_j}``,
    ``beta_j = (beta_{j+1} + P_{i_j})/Q_{i_j}``, and ``g(T_1) = P_m + T_1 (Q - Q_m)`` on g's piece m,
    so ``z = (1 - P_m - (Q - Q_m) beta_1) / (1 + (Q - Q_m) alpha_1)``. NaN when ``alpha_1``
    overflows (pieces of tiny q-mass: the root is then below the smallest positive double).
    """
    alpha, beta = 0.0, 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(k - 1, -1, -1):
            i = pieces[j]
            alpha, beta = (1.0 + alpha) / profile.q_prefix[i], (beta + profile.p_prefix[i]) / profile.q_prefix[i]
        if not np.isfinite(alpha):
            return float("nan")
        m = pieces[k]
        slope = profile.q_prefix[-1] - profile.q_prefix[m]
        return float((1.0 - profile.p_prefix[m] - slope * beta) / (1.0 + slope * alpha))


def _step_down_to_feasible(profile: RatioProfile, root: float, floor: float, k: int) -> _Point | None:
    """A root that rounding put a few ulps past the boundary, stepped down by ``2^i`` ulps."""
    ulp = np.spacing(max(abs(root), 1e-300))
    for i in range(41):
        candidate = root - ulp * 2.0**i
        if candidate <= floor:
            return None
        point = _at(profile, candidate, k)
        if point.feasible:
            return point
    return None


def _newton(profile: RatioProfile, k: int) -> tuple[_Point, bool]:
    """The last feasible Newton iterate, and whether a step overflowed (see ``_root_on_pieces``)."""
    point = _at(profile, 0.0, k)
    for _ in range(MAX_NEWTON_STEPS):
        root = _root_on_pieces(profile, point.pieces, k)
        if np.isnan(root):
            return point, True
        if not root > point.z:
            break
        candidate = _at(profile, min(root, 1.0), k)
        if not candidate.feasible:
            candidate = _step_down_to_feasible(profile, min(root, 1.0), point.z, k)
            if candidate is not None:
                point = candidate
            break
        point = candidate
    return point, False


def schedule_from_profile(profile: RatioProfile, k: int) -> Schedule:
    """The optimal schedule from a prepared ratio profile (see the module docstring).

    Degenerate case: when the q-mass on the lowest-ratio pieces is so small that the tight root z
    lies below the smallest positive double (a Newton step overflows), the tight thresholds cannot
    be represented. Two feasible fallbacks compete with the last feasible iterate: a schedule for
    fewer candidates, padded with ``T = 0`` steps that accept nothing (recursively over k), and the
    tight schedule of the profile without the negligible draft masses, kept only if its thresholds
    are exact for the true profile; the best is returned.
    """
    point, overflowed = _newton(profile, k)
    best = _with_reach(profile, np.array(point.T))
    if overflowed and k > 1:
        shorter = schedule_from_profile(profile, k - 1)
        if shorter.acceptance > best.acceptance:
            best = Schedule(T=np.append(shorter.T, 0.0), R=np.append(shorter.R, shorter.z), z=shorter.z)
    cleaned = _without_negligible_draft_mass(profile, k) if overflowed else None
    if cleaned is not None:
        candidate = _with_reach(profile, np.array(_newton(cleaned, k)[0].T))
        if _exact(candidate) and candidate.acceptance > best.acceptance:
            best = candidate
    return best


def _with_reach(profile: RatioProfile, thresholds: np.ndarray) -> Schedule:
    """The schedule of the given thresholds: ``R_j = 1 - g(T_1) + g(T_j)``, ``z = 1 - g(T_1)``."""
    accepted = profile.g(thresholds)
    z = max(1.0 - accepted[0], 0.0)
    return Schedule(T=thresholds, R=np.maximum(z + accepted, 0.0), z=z)


def _exact(schedule_: Schedule) -> bool:
    """Whether the thresholds are non-increasing with ``T_j - T_{j+1} <= R_j`` (``T_{k+1} = 0``)."""
    T = schedule_.T
    return bool(np.all(np.diff(T) <= 0.0) and np.all(T - np.append(T[1:], 0.0) <= schedule_.R))


def _without_negligible_draft_mass(profile: RatioProfile, k: int) -> RatioProfile | None:
    """The profile with every draft mass too small for k tight steps set to zero (``0 < q(x) <
    max_double^(-1/(k+1))``, so that ``1/q^k`` overflows), or None when there is none.

    Thresholds solved on it are checked against the true profile (`_exact`) before use: such a token's
    mass changes ``g`` by at most ``T q(x)``, below rounding next to the other tokens' mass.
    """
    p, q = np.diff(profile.p_prefix), np.diff(profile.q_prefix)
    negligible = (q > 0.0) & (q < np.finfo(np.float64).max ** (-1.0 / (k + 1)))
    if not negligible.any():
        return None
    return RatioProfile(np.clip(p, 0.0, None), np.where(negligible, 0.0, q))
