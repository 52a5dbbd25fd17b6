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
from resispec.roots import refine_bracket
from resispec.validation import as_count, as_pair

MAX_ROUNDS = 14


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


def _thresholds(profile: RatioProfile, z: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Tight thresholds for each all-reject probability in ``z`` (shape (n,)).

    Returns ``T`` (shape (k, n), row j-1 = ``T_j``) and the piece index of each inversion (k, n).
    """
    thresholds = np.zeros((k + 1, z.size))
    pieces = np.zeros((k, z.size), dtype=np.int64)
    for j in range(k - 1, -1, -1):
        target = z + thresholds[j + 1]
        pieces[j] = profile.h_inverse_piece(target)
        thresholds[j] = np.maximum(profile.h_inverse(target), thresholds[j + 1])
    return thresholds[:k], pieces


def _feasible(profile: RatioProfile, z: np.ndarray, k: int) -> np.ndarray:
    """``z <= 1 - g(T_1(z))``: the thresholds built from z keep every ``a_j <= 1``."""
    return z <= 1.0 - profile.g(_thresholds(profile, z, k)[0][0])


def _solve_on_piece(profile: RatioProfile, z: float, k: int) -> float:
    """Exact root of ``z = 1 - g(T_1(z))`` on the linear pieces that contain ``z``.

    On fixed pieces ``T_j = alpha_j z + beta_j`` with ``alpha_k = 1/Q_{i_k}``,
    ``beta_k = P_{i_k}/Q_{i_k}``, ``alpha_j = (1 + alpha_{j+1})/Q_{i_j}``,
    ``beta_j = (beta_{j+1} + P_{i_j})/Q_{i_j}``, and ``g(T_1) = P_m + T_1 (Q - Q_m)`` on g's piece m,
    so ``z = (1 - P_m - (Q - Q_m) beta_1) / (1 + (Q - Q_m) alpha_1)``.
    """
    _, pieces = _thresholds(profile, np.array([z]), k)
    alpha, beta = 0.0, 0.0
    for j in range(k - 1, -1, -1):
        i = pieces[j, 0]
        alpha, beta = (1.0 + alpha) / profile.q_prefix[i], (beta + profile.p_prefix[i]) / profile.q_prefix[i]
    t1 = alpha * z + beta
    m = int(profile.piece_of(np.array(t1)))
    slope = profile.q_prefix[-1] - profile.q_prefix[m]
    return (1.0 - profile.p_prefix[m] - slope * beta) / (1.0 + slope * alpha)


def _pieces_key(profile: RatioProfile, z: float, k: int) -> tuple[int, ...]:
    thresholds, pieces = _thresholds(profile, np.array([z]), k)
    return tuple(pieces[:, 0].tolist()) + (int(profile.piece_of(thresholds[0])[0]),)


def _root_on_a_piece(profile: RatioProfile, k: int, lo: float, hi: float) -> float | None:
    """The exact root if it lies on the linear pieces of ``lo`` or of ``hi``; else None."""
    for end in (lo, hi):
        key = _pieces_key(profile, end, k)
        root = _solve_on_piece(profile, end, k)
        if lo <= root <= hi and _pieces_key(profile, root, k) == key:
            return root
    return None


def _feasible_below(holds, root: float, lo: float, hi: float) -> float:
    """The largest of ``root - 2^i ulp`` (i = 0..40) in ``[lo, hi]`` where ``holds``; else ``lo``.

    The exact root sits on the boundary of the feasible set, so rounding may put it a few ulps
    outside; stepping down by growing multiples of an ulp finds the feasible side at once.
    """
    steps = root - np.spacing(max(abs(root), 1e-300)) * 2.0 ** np.arange(41)
    steps = steps[(steps >= lo) & (steps <= hi)]
    feasible = steps[holds(steps)] if steps.size else steps
    return float(feasible[0]) if feasible.size else lo


def schedule_from_profile(profile: RatioProfile, k: int) -> Schedule:
    """The optimal schedule from a prepared ratio profile (see the module docstring)."""
    holds = lambda z: _feasible(profile, z, k)  # noqa: E731 - a predicate over a grid of z
    lo, hi = 0.0, 1.0
    if holds(np.array([hi]))[0]:
        lo = hi
    for _ in range(MAX_ROUNDS):
        if lo == hi:
            break
        lo, hi = refine_bracket(holds, lo, hi)
        root = _root_on_a_piece(profile, k, lo, hi)
        if root is not None:
            lo = max(lo, _feasible_below(holds, root, lo, hi))
            break
    thresholds = _thresholds(profile, np.array([lo]), k)[0][:, 0]
    accepted = profile.g(thresholds)
    z = max(1.0 - accepted[0], 0.0)
    reach = np.maximum(z + accepted, 0.0)
    return Schedule(T=thresholds, R=reach, z=z)
