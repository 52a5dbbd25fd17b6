"""Optima: the sequential optimum is the LP's, the WOR estimate brackets the transport LP, orderings hold."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from resispec import get_verifier
from resispec.bounds import optimal_acceptance_lp, sequential_optimum_lp
from sim.batch import PairBatch
from sim.kernels import MonteCarlo, step_stats
from sim.optima import WorSettings, optima, prefix_cut_samples
from tests.strategies import instances

EXACT = MonteCarlo(enumeration_limit=10**6)


def measured(batch, k, wor=WorSettings()):
    stats = {name: step_stats(name, batch, k, np.random.default_rng(0), EXACT)
             for name in ("rrs", "rrs_wor", "spectr", "topk", "resispec")}
    best = optima(batch, [k], {k: stats["resispec"].acceptance}, np.random.default_rng(1), wor)[k]
    return stats, best


@given(instances(max_v=5, max_k=3))
@settings(max_examples=40)
def test_optima_are_the_core_optima_and_order_the_verifiers(instance):
    p, q, k = instance
    stats, best = measured(PairBatch.from_arrays(p[None], q[None]), k)
    assert best.sequential[0] == pytest.approx(get_verifier("resispec").acceptance(p, q, k), abs=1e-12)
    assert best.wor_exact and best.wor[0] == pytest.approx(optimal_acceptance_lp(p, q, min(k, np.count_nonzero(q)), "wor"))
    for name in ("rrs", "spectr", "resispec"):
        assert stats[name].acceptance[0] <= best.iid[0] + 1e-9, name
    assert stats["resispec"].acceptance[0] >= max(stats["rrs"].acceptance[0], stats["spectr"].acceptance[0]) - 1e-9
    assert stats["rrs_wor"].acceptance[0] <= best.wor[0] + 1e-7
    assert stats["topk"].acceptance[0] == pytest.approx(best.topk[0], abs=1e-12)


def test_the_sequential_optimum_is_the_sequential_lp():
    rng = np.random.default_rng(2)
    for _ in range(10):
        p, q = rng.dirichlet(np.full(6, 0.6)), rng.dirichlet(np.full(6, 0.6))
        k = int(rng.integers(1, 5))
        _, best = measured(PairBatch.from_arrays(p[None], q[None]), k)
        assert best.sequential[0] == pytest.approx(sequential_optimum_lp(p, q, k), abs=1e-7)


def test_prefix_cut_estimate_brackets_the_transport_lp():
    rng = np.random.default_rng(4)
    for trial in range(6):
        size, k = 7, 2 + trial % 3
        p, q = rng.dirichlet(np.full(size, 0.7)), rng.dirichlet(np.full(size, 0.7))
        exact = optimal_acceptance_lp(p, q, k, "wor")
        low, high, low_variance, high_variance = prefix_cut_samples(p, q, [k], 20_000, rng)[k]
        assert low <= high
        assert low - 4 * np.sqrt(low_variance) - 1e-3 <= exact <= high + 4 * np.sqrt(high_variance) + 1e-3


def test_monte_carlo_wor_interval_covers_the_mean_lp_value():
    rng = np.random.default_rng(8)
    p, q = rng.dirichlet(np.full(6, 0.5), size=12), rng.dirichlet(np.full(6, 0.5), size=12)
    batch = PairBatch.from_arrays(p, q)
    _, exact = measured(batch, 3)
    _, sampled = measured(batch, 3, WorSettings(lp_limit=1, samples=4000))
    assert exact.wor_exact and not sampled.wor_exact and "monte carlo" in sampled.wor_method
    estimate = sampled.wor_estimate()
    assert estimate.low <= exact.wor.mean() <= estimate.high
    assert estimate.high - estimate.low < 0.05
    assert exact.wor_estimate().low == exact.wor_estimate().high == pytest.approx(exact.wor.mean())


def test_wor_optimum_caps_k_at_the_drafts_support():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.6, 0.4, 0.0])
    _, best = measured(PairBatch.from_arrays(p[None], q[None]), 3)
    assert best.wor[0] == pytest.approx(optimal_acceptance_lp(p, q, 2, "wor"))
    assert best.topk[0] == pytest.approx(0.8)
