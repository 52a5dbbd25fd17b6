"""Tokens per target forward: shapes, the analytic formula, and replays over chains."""

from __future__ import annotations

import numpy as np
import pytest

from resispec.sim.batch import PairBatch
from resispec.sim.kernels import step_stats
from resispec.sim.sources import parse_source
from resispec.sim.tree import analytic_tokens, parse_shape, replay_tokens, successors, tree_nodes


def test_shapes_and_nodes():
    assert parse_shape("4,2,2,1") == (4, 2, 2, 1) and tree_nodes((4, 2, 2, 1)) == 4 + 8 + 16 + 16
    for bad in ("4,x", "4,0", ""):
        with pytest.raises(ValueError, match="tree shape"):
            parse_shape(bad)


def test_analytic_is_the_sum_of_survival_products():
    assert analytic_tokens({2: 0.5, 1: 0.4}, (2, 2, 1)) == pytest.approx(0.5 + 0.25 + 0.1)


def test_replay_walks_consecutive_positions_of_each_chain():
    uniform = np.full((6, 2), 0.5)
    chain, position = np.array([0, 0, 0, 1, 1, 2]), np.array([0, 1, 2, 5, 7, 0])  # chain 1 has a gap
    batch = PairBatch.from_arrays(uniform, uniform, chain=chain, position=position)
    assert successors(batch).tolist() == [1, 2, -1, -1, -1, -1]
    acceptance = {2: np.array([0.5, 0.4, 0.3, 0.9, 0.9, 0.9]), 1: np.array([0.1, 0.2, 0.6, 0.9, 0.9, 0.9])}
    replay = replay_tokens(acceptance, (2, 1), batch)  # starts 0 and 1 have a successor
    assert replay.starts == 2
    assert replay.accepted.value == pytest.approx(np.mean([0.5 + 0.5 * 0.2, 0.4 + 0.4 * 0.6]))
    assert np.isnan(replay_tokens(acceptance, (2, 1, 1, 1), batch).accepted.value)


def test_replay_over_stationary_chains_agrees_with_the_analytic_value():
    batch = parse_source("llm:sigma=1.5,V=64").sample(1600, np.random.default_rng(2))
    shape = (4, 2, 1)
    for name in ("rrs", "resispec"):
        acceptance = {k: step_stats(name, batch, k).acceptance for k in set(shape)}
        analytic = analytic_tokens({k: float(values.mean()) for k, values in acceptance.items()}, shape)
        replay = replay_tokens(acceptance, shape, batch)
        assert replay.starts == 100 * 14
        assert replay.accepted.low <= analytic <= replay.accepted.high, name
        assert replay.accepted.half_width < 0.05
    correlated = PairBatch.from_arrays(np.repeat(batch.p[:100], 16, axis=0), np.repeat(batch.q[:100], 16, axis=0),
                                       chain=batch.chain, position=batch.position)
    acceptance = {k: step_stats("rrs", correlated, k).acceptance for k in set(shape)}
    replay = replay_tokens(acceptance, shape, correlated)  # each chain repeats one pair: Jensen makes it larger
    assert replay.accepted.value > analytic_tokens({k: float(v.mean()) for k, v in acceptance.items()}, shape)


def test_acceptance_curves_are_the_kernels_means_per_k_and_sps_has_one_point():
    from resispec.sim.explorer import Settings, acceptance_curves, stats_by_k
    from resispec.sim.sources import parse_source

    batch = parse_source("logged:sample").sample(8, np.random.default_rng(0))
    curves = acceptance_curves(batch, ["sps", "rrs", "pooled"], 3, Settings(pairs=8))
    overlap = float(np.minimum(batch.p, batch.q).sum(axis=1).mean())
    assert curves["sps"] == pytest.approx([overlap], abs=1e-12)
    assert len(curves["rrs"]) == len(curves["pooled"]) == 3
    assert curves["rrs"][0] == pytest.approx(overlap, abs=1e-12) and curves["pooled"][0] == pytest.approx(overlap)
    pooled = stats_by_k("pooled", batch, [2], Settings(pairs=8))[2]
    assert curves["pooled"][1] == pytest.approx(float(pooled.acceptance.mean()), abs=1e-15)
    assert all(p >= r - 1e-12 for p, r in zip(curves["pooled"], curves["rrs"]))  # pooled reaches alpha*
