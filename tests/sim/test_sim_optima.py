"""Optima: each is the core's (LPs, closed forms, the ratio-prefix bound), and they order the verifiers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from resispec import get_verifier
from resispec.bounds import optimal_acceptance, optimal_acceptance_lp, sequential_optimum_lp
from resispec.bounds_wor import sequential_optimum_wor_lp, wor_prefix_bound
from resispec.sim.batch import PairBatch
from resispec.sim.kernels import MonteCarlo, step_stats
from resispec.sim.optima import WorSettings, optima
from tests.strategies import instances

EXACT = MonteCarlo(enumeration_limit=10**6)
VERIFIERS = ("rrs", "rrs_wor", "spectr", "topk", "resispec", "pooled", "resispec_wor")


def measured(batch, k, wor=WorSettings()):
    stats = {name: step_stats(name, batch, k, np.random.default_rng(0), EXACT) for name in VERIFIERS}
    return stats, optima(batch, [k], {k: stats["resispec"].acceptance}, wor)[k]


def one(p, q):
    return PairBatch.from_arrays(p[None], q[None])


@given(instances(max_v=5, max_k=3))
@settings(max_examples=30)
def test_optima_are_the_core_optima_and_order_the_verifiers(instance):
    p, q, k = instance
    stats, best = measured(one(p, q), k)
    count = min(k, np.count_nonzero(q))
    accepted = {name: values.acceptance[0] for name, values in stats.items()}
    assert best.sequential[0] == pytest.approx(get_verifier("resispec").acceptance(p, q, k), abs=1e-12)
    assert best.wor_route[0] == "lp" and best.wor[0] == pytest.approx(optimal_acceptance_lp(p, q, count, "wor"))
    assert best.sequential_wor[0] == pytest.approx(
        sequential_optimum_wor_lp(p, q, count) if count > 1 else np.minimum(p, q).sum(), abs=1e-7)
    for name in ("rrs", "spectr", "resispec"):
        assert accepted[name] <= best.iid[0] + 1e-9, name
    assert accepted["pooled"] == pytest.approx(best.iid[0], abs=1e-12)
    assert accepted["resispec"] >= max(accepted["rrs"], accepted["spectr"]) - 1e-9
    assert accepted["rrs_wor"] - 1e-9 <= accepted["resispec_wor"] <= best.sequential_wor[0] + 1e-7
    assert best.sequential_wor[0] <= best.wor[0] + 1e-7
    assert accepted["topk"] == pytest.approx(best.topk[0], abs=1e-12)


def test_the_sequential_optimum_is_the_sequential_lp():
    rng = np.random.default_rng(2)
    for _ in range(10):
        p, q = rng.dirichlet(np.full(6, 0.6)), rng.dirichlet(np.full(6, 0.6))
        k = int(rng.integers(1, 5))
        _, best = measured(one(p, q), k)
        assert best.sequential[0] == pytest.approx(sequential_optimum_lp(p, q, k), abs=1e-7)


def test_past_the_lp_limit_alpha_star_wor_is_the_ratio_prefix_bound():
    rng = np.random.default_rng(4)
    p, q = rng.dirichlet(np.full(7, 0.7), size=6), rng.dirichlet(np.full(7, 0.7), size=6)
    batch = PairBatch.from_arrays(p, q)
    for k in (2, 3):
        exact = optima(batch, [k], {k: np.zeros(6)})[k]
        bound = optima(batch, [k], {k: np.zeros(6)}, WorSettings(lp_limit=1))[k]
        assert set(exact.wor_route) == {"lp"} and set(bound.wor_route) == {"prefix"}
        assert exact.wor_method == "transport LP (exact)" and "upper bound" in bound.wor_method
        for n in range(6):
            assert exact.wor[n] == pytest.approx(optimal_acceptance(p[n], q[n], k, "wor"), abs=1e-9)
            assert bound.wor[n] == wor_prefix_bound(p[n], q[n], k).value
            assert bound.wor[n] >= exact.wor[n] - 1e-9  # an upper bound (equal here: a prefix minimises)
        assert 0 < bound.wor_error.max() < 1e-10 and not exact.wor_error.any()


def test_past_the_lp_limit_the_sequential_wor_optimum_is_the_closed_form_or_not_computed():
    rng = np.random.default_rng(5)
    p, q = rng.dirichlet(np.ones(6), size=4), rng.dirichlet(np.ones(6), size=4)
    batch = PairBatch.from_arrays(p, q)
    small = WorSettings(sequential_limit=1)
    for k in (1, 2):
        lp, closed = optima(batch, [k], {k: np.zeros(4)})[k], optima(batch, [k], {k: np.zeros(4)}, small)[k]
        assert set(closed.sequential_wor_route) == {"closed"}
        assert closed.sequential_wor == pytest.approx(lp.sequential_wor, abs=1e-7)
    lp, missing = optima(batch, [3], {3: np.zeros(4)})[3], optima(batch, [3], {3: np.zeros(4)}, small)[3]
    assert set(lp.sequential_wor_route) == {"lp"} and lp.sequential_wor_method == "sequential WOR LP"
    assert np.isnan(missing.sequential_wor).all() and "not computed" in missing.sequential_wor_method
    capped = PairBatch.from_arrays(p, np.vstack([q[:3], [0.5, 0.5, 0, 0, 0, 0]]))
    mixed = optima(capped, [3], {3: np.zeros(4)}, small)[3]
    assert mixed.sequential_wor_method.count("pairs") == 2  # k capped at 2 on the last pair: closed form there


def test_wor_optimum_caps_k_at_the_drafts_support():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.6, 0.4, 0.0])
    _, best = measured(one(p, q), 3)
    assert best.wor[0] == pytest.approx(optimal_acceptance_lp(p, q, 2, "wor"))
    assert best.sequential_wor[0] == pytest.approx(get_verifier("resispec_wor").acceptance(p, q, 2), abs=1e-12)
    assert best.topk[0] == pytest.approx(0.8)
