"""Batched resispec schedules: torch port of ``resispec.shaping.schedule_from_profile``.

Per node: thresholds ``T_1 >= ... >= T_k`` (``T_{k+1} = 0``) made tight, ``h(T_j) = z + T_{j+1}``, so
``T_k = h^{-1}(z)``, ``T_{k-1} = h^{-1}(z + T_k)``, ..., and ``z`` solves ``z = 1 - g(T_1(z))``. The
map ``d(z) = z - 1 + g(T_1(z))`` is concave, increasing and piecewise linear; Newton's method from
``z = 0`` solves the linear equation on the pieces of the current z (``alpha``/``beta`` recursion of
the NumPy module), never passes the root (every iterate feasible, ``z <= 1 - g(T_1(z))``), and stops
at the exact root. All nodes iterate together (a node that has stopped keeps its point); a root
that rounding put past the boundary is stepped down by ``2^i`` ulps, as in NumPy. Finally
``R_j = 1 - g(T_1) + g(T_j)`` is derived from the thresholds, which keeps ``T_j - T_{j+1} <= R_j``:
numerical error can cost acceptance, never exactness.

One host sync per Newton iteration (to stop once every node has converged; a few iterations).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from resispec.row_ratio_profile import RowRatioProfile
from resispec.shaping import MAX_NEWTON_STEPS

STEP_DOWN_TRIES = 41
"""Ulp step-downs ``root - ulp 2^i``, i < 41, tried for a root that rounding made infeasible (as NumPy)."""


@dataclass(frozen=True)
class TorchSchedule:
    """Per node: thresholds ``T`` (B, k), reach probabilities ``R`` (B, k), all-reject ``z`` (B,)."""

    T: torch.Tensor
    R: torch.Tensor
    z: torch.Tensor


@dataclass(frozen=True)
class _Points:
    """Tight thresholds at one z per node: ``z`` (B,), ``T`` (B, k), ``pieces`` (B, k + 1) long
    (``pieces[:, j-1]`` gave ``T_j``, ``pieces[:, k]`` is g's piece at ``T_1``), ``accepted = g(T_1)``."""

    z: torch.Tensor
    T: torch.Tensor
    pieces: torch.Tensor
    accepted: torch.Tensor

    @property
    def feasible(self) -> torch.Tensor:
        return self.z <= (1.0 - self.accepted).clamp(min=0.0)

    def where(self, take: torch.Tensor, other: _Points) -> _Points:
        """``other`` in the nodes where ``take`` (B,) holds, self elsewhere."""
        return _Points(
            z=torch.where(take, other.z, self.z),
            T=torch.where(take[:, None], other.T, self.T),
            pieces=torch.where(take[:, None], other.pieces, self.pieces),
            accepted=torch.where(take, other.accepted, self.accepted),
        )


def _gather(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``values[b, index[b]]`` (B,)."""
    return values.gather(1, index[:, None])[:, 0]


def _at(profile: RowRatioProfile, z: torch.Tensor, k: int) -> _Points:
    """``T_k = h^{-1}(z)``, ``T_j = h^{-1}(z + T_{j+1})`` (kept non-increasing) and ``g(T_1)``, per node."""
    thresholds = z.new_empty(z.shape[0], k)
    pieces = torch.empty((z.shape[0], k + 1), dtype=torch.long, device=z.device)
    below = torch.zeros_like(z)
    for j in range(k - 1, -1, -1):
        level = z + below
        i = torch.searchsorted(profile.h_at_ratio, level[:, None], right=True)[:, 0]
        inverse = (level + _gather(profile.p_prefix, i)) / _gather(profile.q_prefix, i)
        below = torch.maximum(torch.maximum(inverse, _gather(profile.ratio, i - 1)), below)
        thresholds[:, j], pieces[:, j] = below, i
    m = pieces[:, k] = profile.piece_of(thresholds[:, :1].contiguous())[:, 0]
    slope = profile.q_prefix[:, -1] - _gather(profile.q_prefix, m)
    accepted = _gather(profile.p_prefix, m) + thresholds[:, 0] * slope
    return _Points(z=z, T=thresholds, pieces=pieces, accepted=accepted)


def _root_on_pieces(profile: RowRatioProfile, pieces: torch.Tensor, k: int) -> torch.Tensor:
    """Root (B,) of ``z = 1 - g(T_1(z))`` with every map on the given pieces (one Newton step).

    ``T_j = alpha_j z + beta_j`` with ``alpha_j = (1 + alpha_{j+1})/Q_{i_j}``,
    ``beta_j = (beta_{j+1} + P_{i_j})/Q_{i_j}``; on g's piece m the root is
    ``(1 - P_m - (Q - Q_m) beta_1) / (1 + (Q - Q_m) alpha_1)``.
    """
    alpha = profile.p_prefix.new_zeros(pieces.shape[0])
    beta = torch.zeros_like(alpha)
    for j in range(k - 1, -1, -1):
        i = pieces[:, j]
        q_i = _gather(profile.q_prefix, i)
        alpha, beta = (1.0 + alpha) / q_i, (beta + _gather(profile.p_prefix, i)) / q_i
    m = pieces[:, k]
    slope = profile.q_prefix[:, -1] - _gather(profile.q_prefix, m)
    return (1.0 - _gather(profile.p_prefix, m) - slope * beta) / (1.0 + slope * alpha)


def _step_down_to_feasible(profile: RowRatioProfile, root: torch.Tensor, floor: torch.Tensor,
                           lanes: torch.Tensor, k: int) -> tuple[_Points, torch.Tensor]:
    """For the nodes in ``lanes``: the first feasible ``root - ulp 2^i`` above ``floor``, and where found."""
    magnitude = root.abs().clamp(min=1e-300)
    ulp = torch.nextafter(magnitude, torch.full_like(magnitude, torch.inf)) - magnitude
    alive, found = lanes.clone(), torch.zeros_like(lanes)
    result = _at(profile, root, k)
    for i in range(STEP_DOWN_TRIES):
        z = root - ulp * 2.0**i
        alive &= z > floor
        point = _at(profile, torch.where(alive, z, root), k)  # other nodes: a valid z, result unused
        hit = alive & point.feasible
        result, found, alive = result.where(hit, point), found | hit, alive & ~hit
        if not bool(alive.any()):
            break
    return result, found


def schedule_from_profile(profile: RowRatioProfile, k: int) -> TorchSchedule:
    """The optimal schedule of every node from its prepared ratio profile (see the module docstring)."""
    point = _at(profile, profile.p_prefix.new_zeros(profile.ratio.shape[0]), k)
    active = torch.ones_like(point.z, dtype=torch.bool)
    for _ in range(MAX_NEWTON_STEPS):
        root = _root_on_pieces(profile, point.pieces, k)
        active &= root > point.z
        if not bool(active.any()):
            break
        trial = torch.where(active, root.clamp(max=1.0), point.z)
        candidate = _at(profile, trial, k)
        stuck = active & ~candidate.feasible
        if bool(stuck.any()):
            stepped, found = _step_down_to_feasible(profile, trial, point.z, stuck, k)
            point = point.where(found, stepped)
        point = point.where(active & candidate.feasible, candidate)
        active &= candidate.feasible
    accepted = profile.g(point.T)
    z = (1.0 - accepted[:, 0]).clamp(min=0.0)
    return TorchSchedule(T=point.T, R=(z[:, None] + accepted).clamp(min=0.0), z=z)
