"""The resispec schedule: thresholds ``T_1 >= ... >= T_k``, reach probabilities and ``z``.

Step j of resispec accepts candidate x with probability
``a_j(x) = [min(p, T_j q) - min(p, T_{j+1} q)](x) / (R_j q(x))``, ``T_{k+1} = 0``, where
``R_j = 1 - g(T_1) + g(T_j)`` is the probability of reaching step j and ``g(s) = sum min(p, s q)``.
Any non-increasing thresholds with ``T_j - T_{j+1} <= R_j`` give an exact verifier (the accepted
mass telescopes to ``min(p, T_1 q)``, the residual adds ``(p - T_1 q)+``). The best ones make every
constraint tight, ``h(T_j) = z + T_{j+1}`` with ``h(s) = s - g(s)``: for a given ``z`` this fixes
``T_k = h^{-1}(z)``, ``T_{k-1} = h^{-1}(z + T_k)``, ..., ``T_1``, and ``z`` solves
``z = 1 - g(T_1(z))`` (``z - 1 + g(T_1(z))`` is increasing, so the root is unique).

Numerics: ``z`` is taken on the feasible side, ``z <= 1 - g(T_1(z))``, and ``R_j`` is then derived
from the thresholds as ``1 - g(T_1) + g(T_j)``; that keeps ``T_j - T_{j+1} <= R_j``, so imprecision
can only cost acceptance, never exactness. The root is bracketed by vectorised grid refinement, then
solved exactly once the bracket lies on one linear piece of every map involved.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from resispec.ratio_profile import RatioProfile
from resispec.validation import as_count, as_pair

MAX_ROUNDS = 8


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
class _Evaluation:
    """Tight thresholds for a vector of candidate ``z`` (shape (n,)) and every piece involved.

    ``T`` (k, n): row j-1 is ``T_j``; ``pieces`` (k+1, n): row j-1 the piece of the inversion that
    produced ``T_j``, row k the piece of ``g`` at ``T_1``; ``feasible`` (n,): ``z <= 1 - g(T_1)``.
    """

    z: np.ndarray
    T: np.ndarray
    pieces: np.ndarray
    feasible: np.ndarray


def _evaluate(profile: RatioProfile, z: np.ndarray, k: int) -> _Evaluation:
    """``T_k = h^{-1}(z)``, ``T_j = h^{-1}(z + T_{j+1})`` (kept non-increasing), and feasibility."""
    thresholds = np.empty((k, z.size))
    pieces = np.empty((k + 1, z.size), dtype=np.int64)
    below = np.zeros(z.size)
    for j in range(k - 1, -1, -1):
        target = z + below
        pieces[j] = profile.h_inverse_piece(target)
        below = thresholds[j] = np.maximum(profile.h_inverse_on_piece(target, pieces[j]), below)
    pieces[k] = profile.piece_of(thresholds[0])
    accepted = profile.g_on_piece(thresholds[0], pieces[k])
    return _Evaluation(z=z, T=thresholds, pieces=pieces, feasible=z <= np.maximum(1.0 - accepted, 0.0))


def _root_on_pieces(profile: RatioProfile, pieces: np.ndarray, k: int) -> float:
    """Exact root of ``z = 1 - g(T_1(z))`` if every map stays on the given pieces (shape (k+1,)).

    On fixed pieces ``T_j = alpha_j z + beta_j`` with ``alpha_k = 1/Q_{i_k}``,
    ``beta_k = P_{i_k}/Q_{i_k}``, ``alpha_j = (1 + alpha_{j+1})/Q_{i_j}``,
    ``beta_j = (beta_{j+1} + P_{i_j})/Q_{i_j}``, and ``g(T_1) = P_m + T_1 (Q - Q_m)`` on g's piece m,
    so ``z = (1 - P_m - (Q - Q_m) beta_1) / (1 + (Q - Q_m) alpha_1)``.
    """
    alpha, beta = 0.0, 0.0
    for j in range(k - 1, -1, -1):
        i = pieces[j]
        alpha, beta = (1.0 + alpha) / profile.q_prefix[i], (beta + profile.p_prefix[i]) / profile.q_prefix[i]
    m = pieces[k]
    slope = profile.q_prefix[-1] - profile.q_prefix[m]
    return (1.0 - profile.p_prefix[m] - slope * beta) / (1.0 + slope * alpha)


def _polished(profile: RatioProfile, grid: _Evaluation, cell: int, k: int) -> float | None:
    """The largest feasible z in the grid cell ``[z_cell, z_cell+1]`` that is an exact root.

    The roots solved on the pieces of either end are stepped down by ``2^i`` ulps (i = 0..40),
    since rounding may put the exact root a few ulps on the infeasible side; a candidate counts only
    if it stays on the pieces it was solved on. None when no candidate qualifies.
    """
    lo, hi = grid.z[cell], grid.z[cell + 1]
    ladders, keys = [], []
    for end in (cell, cell + 1):
        root = _root_on_pieces(profile, grid.pieces[:, end], k)
        ladder = root - np.spacing(max(abs(root), 1e-300)) * _ULP_STEPS
        ladder = ladder[(ladder >= lo) & (ladder <= hi)]
        ladders.append(ladder)
        keys.append(np.broadcast_to(grid.pieces[:, end:end + 1], (k + 1, ladder.size)))
    z = np.concatenate(ladders)
    if not z.size:
        return None
    evaluation = _evaluate(profile, z, k)
    good = evaluation.feasible & (evaluation.pieces == np.hstack(keys)).all(axis=0)
    return float(z[good].max()) if good.any() else None


_ULP_STEPS = np.concatenate([[0.0], 2.0 ** np.arange(41)])
GRID_POINTS = 257


def schedule_from_profile(profile: RatioProfile, k: int) -> Schedule:
    """The optimal schedule from a prepared ratio profile (see the module docstring).

    Each round evaluates a grid of ``GRID_POINTS`` values of z in the current bracket at once,
    keeps the cell where feasibility ends, and tries the exact solution on the pieces of its ends;
    the bracket's feasible end is the fallback (the bracket shrinks 256-fold per round).
    """
    lo, hi = 0.0, 1.0
    best = 0.0
    for _ in range(MAX_ROUNDS):
        grid = _evaluate(profile, np.linspace(lo, hi, GRID_POINTS), k)
        feasible = np.flatnonzero(grid.feasible)
        cell = int(feasible[-1]) if feasible.size else 0
        best = float(grid.z[cell])
        if cell == GRID_POINTS - 1:
            break
        root = _polished(profile, grid, cell, k)
        if root is not None:
            best = max(best, root)
            break
        lo, hi = grid.z[cell], grid.z[cell + 1]
        if not lo < hi:
            break
    final = _evaluate(profile, np.array([best]), k)
    thresholds = final.T[:, 0]
    accepted = profile.g(thresholds)
    z = max(1.0 - accepted[0], 0.0)
    return Schedule(T=thresholds, R=np.maximum(z + accepted, 0.0), z=z)
