"""The race quadrature (resispec.race): the left-tail substitution ``ln T = s - exp(-s)`` integrates
as accurately as the plain ``ln T`` trapezoid rule at a four times finer step."""

from __future__ import annotations

import math

import numpy as np
import pytest

from resispec.benchmarks.verify_speed import llm_like_pair
from resispec.race import Race, RaceGrid, prefix_all_in, race_grid, substitution_point
from resispec.ratio_profile import RatioProfile
from resispec.verifiers.pooled_wor.scan import thinned_scan

AGREE = 1e-13
"""Largest difference allowed between the two rules (both far more accurate; rounding is ~1e-14)."""


def _drafts() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(25)
    pairs = [(rng.dirichlet(np.full(size, alpha)), rng.dirichlet(np.full(size, alpha)))
             for size in (6, 40, 300) for alpha in (0.1, 0.5, 2.0)]
    pairs += [llm_like_pair(1000, np.random.default_rng(seed))[1:] for seed in (0, 3)]
    pairs.append((np.array([0.5, 0.3, 0.2]), np.array([0.98, 0.019, 0.001])))
    pairs.append((np.array([0.2, 0.3, 0.5]), np.array([1 - 1e-6, 1e-6 - 1e-9, 1e-9])))
    return pairs


def _plain_grid(q: np.ndarray, k: int, step: float) -> RaceGrid:
    """The trapezoid rule in ``u = ln T`` with the same ends as ``race_grid``."""
    grid = race_grid(q, k)
    u_lo, u_hi = math.log(grid.t[0]), math.log(grid.t[-1])
    u = np.linspace(u_lo, u_hi, 2 * math.ceil((u_hi - u_lo) / (2 * step)) + 1)
    t = np.exp(u)
    return RaceGrid(t=t, step=float(u[1] - u[0]), weight=(u[1] - u[0]) * t, coarse=np.zeros(t.size))


def _integrals(p: np.ndarray, q: np.ndarray, k: int, grid: RaceGrid) -> np.ndarray:
    """P_k of every ratio prefix, then theta-weighted D and L of a scan of each block of the cut at V / 3
    (inside ascending with the outside bad, outside descending after the inside pair)."""
    order = RatioProfile(p, q).order
    exponent = np.multiply.outer(-q[order], grid.t)
    race = Race(order=order, rate=q[order], k=k, grid=grid, stay=np.exp(exponent), ring=-np.expm1(exponent))
    all_in, _, pairs = prefix_all_in(race.stay, race.ring, race.rate, k, grid.weight, grid.weight)
    cut, p_rows = max(1, p.size // 3), p[order]
    outside_bad = np.zeros((2, k, grid.t.size))
    outside_bad[0, 0] = np.exp(-race.rate[cut:].sum() * grid.t)
    inside = thinned_scan(race.stay, race.ring, race.rate, p_rows, np.arange(cut), outside_bad, grid.weight)
    outside = thinned_scan(race.stay, race.ring, race.rate, p_rows, np.arange(cut, p.size)[::-1].copy(),
                           race.prefix_pair(cut, pairs), grid.weight)
    return np.concatenate([all_in, *inside[1:], *outside[1:]])


@pytest.mark.parametrize("k", [1, 2, 4, 6])
def test_substituted_grid_agrees_with_a_fine_plain_grid(k):
    compared = 0
    for p, q in _drafts():
        if q.size <= k:
            continue
        substituted = _integrals(p, q, k, race_grid(q, k))
        plain = _integrals(p, q, k, _plain_grid(q, k, 0.05))
        assert np.abs(substituted - plain).max() < AGREE
        assert race_grid(q, k).t.size < _plain_grid(q, k, 0.2).t.size  # fewer nodes than the old rule
        compared += 1
    assert compared >= 8


def test_a_coarse_substituted_step_is_detected():
    """The comparison can fail: the substituted rule at twice the step misses by far more than AGREE."""
    p, q = llm_like_pair(1000, np.random.default_rng(0))[1:]
    grid = race_grid(q, 4)
    coarse = RaceGrid(t=grid.t[::2], step=2 * grid.step, weight=2 * grid.weight[::2], coarse=np.zeros(0))
    miss = np.abs(_integrals(p, q, 4, coarse) - _integrals(p, q, 4, _plain_grid(q, 4, 0.05))).max()
    assert miss > 100 * AGREE


@pytest.mark.parametrize("t", [1e-18, 1.4e-9, 7e-5, 1.0, 53.3, 1e12])
def test_substitution_point_inverts_the_map(t):
    s = substitution_point(math.log(t))
    assert s - math.exp(-s) == pytest.approx(math.log(t), abs=1e-12)
