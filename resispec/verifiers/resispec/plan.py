"""resispec's plan, for B rows at once (NumPy or torch): thresholds ``T_1 >= ... >= T_k``, reach ``R``, ``z``.

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
finitely many pieces it stops at the exact root. All rows iterate together (a row that has stopped
keeps its point; one check per iteration, a host sync on a GPU); a root that rounding put a few ulps
past the boundary is stepped down by ``2^i`` ulps. ``R_j`` is then derived from the thresholds as
``1 - g(T_1) + g(T_j)``, which keeps ``T_j - T_{j+1} <= R_j``: imprecision can only cost acceptance,
never exactness. The functions g, h and ``h^{-1}`` are read off the rows' ratio profiles
(``resispec.row_ratio_profile``): one sort per row, then O(log V) per evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from array_api_compat import device as device_of

from resispec.row_ratio_profile import RowRatioProfile
from resispec.rows import (
    Array,
    ArrayRowValues,
    ScalarRowValues,
    float_errors_allowed,
    namespace,
    placed_rows,
    row_values,
)
from resispec.validation import as_count, as_pair

MAX_NEWTON_STEPS = 64
STEP_DOWN_TRIES = 41
"""Ulp step-downs ``root - ulp 2^i``, i < 41, tried for a root that rounding made infeasible."""


@dataclass(frozen=True)
class Schedule:
    """Thresholds ``T`` (``T_1..T_k``), reach probabilities ``R`` (``R_1..R_k``), all-reject ``z``:
    per row, ``T`` and ``R`` (B, k), ``z`` (B,); for one instance (``schedule``) (k,), (k,) and a float.

    ``acceptance = g(T_1) = 1 - z``.
    """

    T: Array
    R: Array
    z: Array

    @property
    def acceptance(self) -> Array:
        return 1.0 - self.z

    def where(self, take: Array, other: Schedule) -> Schedule:
        """``other`` in the rows where ``take`` (B,) holds, self elsewhere."""
        xp = namespace(self.T)
        return Schedule(T=xp.where(take[:, None], other.T, self.T), R=xp.where(take[:, None], other.R, self.R),
                        z=xp.where(take, other.z, self.z))


def schedule(p: np.ndarray, q: np.ndarray, k: int) -> Schedule:
    """The optimal resispec schedule of one instance: target ``p``, draft ``q`` (shape (V,)), k candidates."""
    p_array, q_array = as_pair(p, q)
    rows = resispec_plan(p_array[None], q_array[None], as_count(k))
    return Schedule(T=rows.T[0], R=rows.R[0], z=float(rows.z[0]))


def resispec_plan(p: Array, q: Array, k: int) -> Schedule:
    """The optimal schedule of every row of ``p``, ``q`` (B, V), validated float64 (module docstring)."""
    return schedule_from_profile(RowRatioProfile(p, q), k)


@dataclass(frozen=True)
class _Points:
    """Tight thresholds at one z per row: ``z``, ``T`` (B, k), ``pieces`` (B, k + 1) (``pieces[:, j-1]`` is the
    piece of the inversion that gave ``T_j``, ``pieces[:, k]`` g's piece at ``T_1``), ``accepted = g(T_1)``;
    ``z`` and ``accepted`` are per-row values of ``rows`` (``resispec.rows.row_values``)."""

    rows: ArrayRowValues | ScalarRowValues
    z: Array
    T: Array
    pieces: Array
    accepted: Array

    @property
    def feasible(self) -> Array:
        return self.z <= self.rows.maximum(1.0 - self.accepted, 0.0)

    def where(self, take: Array, other: _Points) -> _Points:
        """``other`` in the rows where ``take`` holds, self elsewhere."""
        rows = self.rows
        return _Points(rows=rows, z=rows.where(take, other.z, self.z), T=rows.where(take, other.T, self.T),
                       pieces=rows.where(take, other.pieces, self.pieces),
                       accepted=rows.where(take, other.accepted, self.accepted))


def _at(profile: RowRatioProfile, rows: ArrayRowValues | ScalarRowValues, z: Array, k: int) -> _Points:
    """``T_k = h^{-1}(z)``, ``T_j = h^{-1}(z + T_{j+1})`` (kept non-increasing) and ``g(T_1)``, per row.

    ``h^{-1}(y) = max((y + P_i) / Q_i, rho_(i))`` on the piece i with ``h(rho_(i)) <= y < h(rho_(i+1))``.
    """
    thresholds, pieces = [], []  # T_k, ..., T_1 and their pieces
    below = rows.full(0.0)
    for _ in range(k):
        level = z + below
        i = rows.search(profile.h_at_ratio, level)
        inverse = (level + rows.at(profile.p_prefix, i)) / rows.at(profile.q_prefix, i)
        below = rows.maximum(rows.maximum(inverse, rows.at(profile.ratio, i - 1)), below)
        thresholds.append(below)
        pieces.append(i)
    m = rows.search(profile.ratio, below)
    accepted = rows.at(profile.p_prefix, m) + below * (rows.column(profile.q_prefix, -1) - rows.at(profile.q_prefix, m))
    return _Points(rows=rows, z=z, T=rows.stack(thresholds[::-1]), pieces=rows.stack([*pieces[::-1], m]),
                   accepted=accepted)


def _root_on_pieces(profile: RowRatioProfile, rows: ArrayRowValues | ScalarRowValues, pieces: Array, k: int) -> Array:
    """Root of ``z = 1 - g(T_1(z))`` per row with every map on the given pieces (one Newton step).

    On fixed pieces ``T_j = alpha_j z + beta_j`` with ``alpha_k = 1/Q_{i_k}``, ``beta_k = P_{i_k}/Q_{i_k}``,
    ``alpha_j = (1 + alpha_{j+1})/Q_{i_j}``, ``beta_j = (beta_{j+1} + P_{i_j})/Q_{i_j}``, and
    ``g(T_1) = P_m + T_1 (Q - Q_m)`` on g's piece m, so
    ``z = (1 - P_m - (Q - Q_m) beta_1) / (1 + (Q - Q_m) alpha_1)``. NaN where ``alpha_1`` overflows
    (pieces of tiny q-mass: the root is then below the smallest positive double).
    """
    alpha = beta = rows.full(0.0)
    with float_errors_allowed(profile.ratio):
        for j in range(k - 1, -1, -1):
            i = rows.column(pieces, j)
            q_i = rows.at(profile.q_prefix, i)
            alpha, beta = (1.0 + alpha) / q_i, (beta + rows.at(profile.p_prefix, i)) / q_i
        m = rows.column(pieces, k)
        slope = rows.column(profile.q_prefix, -1) - rows.at(profile.q_prefix, m)
        root = (1.0 - rows.at(profile.p_prefix, m) - slope * beta) / (1.0 + slope * alpha)
    return rows.where(rows.isfinite(alpha), root, rows.full(float("nan")))


def _step_down_to_feasible(profile: RowRatioProfile, rows: ArrayRowValues | ScalarRowValues, root: Array,
                           floor: Array, lanes: Array, k: int) -> tuple[_Points, Array]:
    """For the rows in ``lanes``: the first feasible ``root - ulp 2^i`` above ``floor``, and where found."""
    magnitude = rows.maximum(abs(root), 1e-300)
    ulp = rows.next_up(magnitude) - magnitude
    alive, found = lanes, rows.full(False)
    result = None
    for i in range(STEP_DOWN_TRIES):
        z = root - ulp * 2.0**i
        alive = alive & (z > floor)
        point = _at(profile, rows, rows.where(alive, z, root), k)  # other rows: a valid z, result unused
        hit = alive & point.feasible
        result = point if result is None else result.where(hit, point)
        found, alive = found | hit, alive & rows.logical_not(hit)
        if not rows.any(alive):
            break
    return result, found


def _newton(profile: RowRatioProfile, k: int) -> tuple[_Points, Array]:
    """The last feasible Newton iterate of every row, and where a step overflowed (``_root_on_pieces``)."""
    rows = row_values(profile.ratio)
    point = _at(profile, rows, rows.full(0.0), k)
    active, overflowed = rows.full(True), rows.full(False)
    for _ in range(MAX_NEWTON_STEPS):
        root = _root_on_pieces(profile, rows, point.pieces, k)
        overflowed = overflowed | (active & rows.isnan(root))
        active = active & (root > point.z)
        if not rows.any(active):
            break
        trial = rows.where(active, rows.minimum(root, 1.0), point.z)
        candidate = _at(profile, rows, trial, k)
        feasible = candidate.feasible
        stuck = active & rows.logical_not(feasible)
        if rows.any(stuck):
            stepped, found = _step_down_to_feasible(profile, rows, trial, point.z, stuck, k)
            point = point.where(found, stepped)
        point = point.where(active & feasible, candidate)
        active = active & feasible
    return point, overflowed


def schedule_from_profile(profile: RowRatioProfile, k: int) -> Schedule:
    """The optimal schedule of every row from its prepared ratio profile (see the module docstring).

    Degenerate rows: where the q-mass on the lowest-ratio pieces is so small that the tight root z lies
    below the smallest positive double (a Newton step overflows), the tight thresholds cannot be
    represented. Two feasible fallbacks compete with the last feasible iterate there: a schedule for
    fewer candidates, padded with ``T = 0`` steps that accept nothing (recursively over k), and the
    tight schedule of the profile without the negligible draft masses, kept only if its thresholds are
    exact for the true profile; the best is kept. They are built for those rows only.
    """
    point, overflowed = _newton(profile, k)
    plan = _with_reach(profile, point.T)
    if not point.rows.any(overflowed):
        return plan
    xp = namespace(plan.T)
    overflowed = xp.asarray(overflowed, dtype=xp.bool, device=device_of(plan.T))
    if overflowed.ndim == 0:
        overflowed = overflowed[None]
    rows = xp.nonzero(overflowed)[0]
    sub = profile.rows(rows)
    best = Schedule(T=xp.take(plan.T, rows, axis=0), R=xp.take(plan.R, rows, axis=0), z=xp.take(plan.z, rows, axis=0))
    if k > 1:
        shorter = schedule_from_profile(sub, k - 1)
        zero = xp.zeros_like(shorter.z)[:, None]
        padded = Schedule(T=xp.concat([shorter.T, zero], axis=1), R=xp.concat([shorter.R, shorter.z[:, None]], axis=1),
                          z=shorter.z)
        best = best.where(padded.acceptance > best.acceptance, padded)
    without, negligible = _without_negligible_draft_mass(sub, k)
    cleaned = _with_reach(sub, _newton(without, k)[0].T)
    best = best.where(negligible & _exact(cleaned) & (cleaned.acceptance > best.acceptance), cleaned)
    batch = overflowed.shape[0]
    return Schedule(T=xp.where(overflowed[:, None], placed_rows(best.T, rows, batch, 0.0), plan.T),
                    R=xp.where(overflowed[:, None], placed_rows(best.R, rows, batch, 0.0), plan.R),
                    z=xp.where(overflowed, placed_rows(best.z, rows, batch, 0.0), plan.z))


def _with_reach(profile: RowRatioProfile, thresholds: Array) -> Schedule:
    """The schedule of the given thresholds (B, k): ``R_j = 1 - g(T_1) + g(T_j)``, ``z = 1 - g(T_1)``."""
    xp = namespace(thresholds)
    accepted = profile.g(thresholds)
    z = xp.maximum(1.0 - accepted[:, 0], 0.0)
    return Schedule(T=thresholds, R=xp.maximum(z[:, None] + accepted, 0.0), z=z)


def _exact(plan: Schedule) -> Array:
    """Per row (B,): the thresholds are non-increasing with ``T_j - T_{j+1} <= R_j`` (``T_{k+1} = 0``)."""
    xp = namespace(plan.T)
    following = xp.concat([plan.T[:, 1:], xp.zeros_like(plan.T[:, :1])], axis=1)
    return xp.all((following <= plan.T) & (plan.T - following <= plan.R), axis=1)


def _without_negligible_draft_mass(profile: RowRatioProfile, k: int) -> tuple[RowRatioProfile, Array]:
    """The profile with every draft mass too small for k tight steps set to zero (``0 < q(x) <
    max_double^(-1/(k+1))``, so that ``1/q^k`` overflows), and the rows (bool (B,)) that had such a mass.

    Thresholds solved on it are checked against the true profile (``_exact``) before use: such a token's
    mass changes ``g`` by at most ``T q(x)``, below rounding next to the other tokens' mass.
    """
    xp = namespace(profile.p_prefix)
    p = profile.p_prefix[:, 1:] - profile.p_prefix[:, :-1]
    q = profile.q_prefix[:, 1:] - profile.q_prefix[:, :-1]
    negligible = (q > 0.0) & (q < float(np.finfo(np.float64).max) ** (-1.0 / (k + 1)))
    return RowRatioProfile(xp.maximum(p, 0.0), xp.where(negligible, 0.0, q)), xp.any(negligible, axis=1)
