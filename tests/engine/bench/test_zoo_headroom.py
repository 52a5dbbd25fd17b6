"""The zoo's predicted speedups: the flat (GPU-like) curve, the table's ratios to rrs, and the timed u(k)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from resispec.engine.bench.headroom import attainable
from resispec.engine.bench.zoo_headroom import BASELINE, flat_curve, node_verifiers, verification_costs, zoo_table
from resispec.engine.decode.calibration import Calibration
from resispec.engine.decode.tree_search import MAX_DEPTH

LINEAR = {1: 1.0, 2: 2.0, 4: 4.0, 8: 8.0, 16: 16.0, 32: 32.0}


def costs(target: dict[int, float] = LINEAR) -> Calibration:
    """A forward costing one unit per node, a free draft, no verification or bookkeeping."""
    return Calibration([0.5], target, {1: 0.0, 16: 0.0}, 0.0, 100, [1.0] * MAX_DEPTH, {1: 0.0}, 0.0)


def test_the_flat_curve_is_one_forward_up_to_the_width_then_grows_in_proportion():
    curve = costs()
    flat = flat_curve(curve, 8)
    as_measured = replace(curve, target_seconds=flat)
    assert [as_measured.target_cost(n) for n in (1, 2, 5, 8, 16, 32)] == pytest.approx([1, 1, 1, 1, 2, 4])
    with pytest.raises(ValueError, match="width"):
        flat_curve(curve, 0)


def test_the_table_on_a_flat_curve_matches_the_headroom_closed_form_and_divides_by_rrs():
    # a flat forward up to 32 nodes, a free draft, A(k) = a for every k: the deepest chain, (1 - a^13) / (1 - a)
    a = 0.6
    points = zoo_table(costs(), {"rrs": [a] * 4, "pooled": [0.8] * 4}, {"rrs": {k: 0.0 for k in range(1, 5)},
                                                                          "pooled": {k: 0.0 for k in range(1, 5)}},
                       widths=[32])
    flat = {(p.verifier, p.curve): p for p in points}
    assert flat["rrs", "flat(32)"].speedup == pytest.approx((1 - a ** (MAX_DEPTH + 1)) / (1 - a), rel=1e-12)
    assert flat["rrs", "flat(32)"].choice.branching == (1,) * MAX_DEPTH
    assert flat["rrs", "flat(32)"].speedup == pytest.approx(attainable(costs(flat_curve(costs(), 32)), a, 0.0).speedup)
    ratio = flat["pooled", "flat(32)"].speedup / flat["rrs", "flat(32)"].speedup
    assert flat["pooled", "flat(32)"].over_baseline == pytest.approx(ratio, rel=1e-12)
    # on a forward costing a node per node nothing beats plain decoding: both choose it, at 1x
    assert flat["rrs", "cpu"].choice.branching == () and flat["rrs", "cpu"].speedup == pytest.approx(1.0)
    assert flat["pooled", "cpu"].over_baseline == pytest.approx(1.0)


def test_with_every_verification_at_sps_cost_the_verifiers_differ_by_acceptance_alone():
    flat = {1: 1.0, 32: 1.0}
    slow = {k: 10.0 for k in range(1, 5)}  # a plan-building verifier: 10 forwards a node
    points = zoo_table(costs(flat), {"sps": [0.6], "rrs": [0.6] * 4, "pooled": [0.8] * 4},
                       {"sps": {1: 0.0}, "rrs": {k: 0.0 for k in range(1, 5)}, "pooled": slow}, widths=[32])
    found = {(p.verifier, p.curve): p for p in points}
    assert found["pooled", "flat(32)"].over_baseline < 1 < found["pooled", "flat(32), u = sps"].over_baseline
    assert found["pooled", "flat(32), u = sps"].speedup == pytest.approx((1 - 0.8 ** (MAX_DEPTH + 1)) / 0.2)


def test_without_rrs_there_is_no_ratio():
    points = zoo_table(costs(), {"pooled": [0.8] * 4}, {"pooled": {k: 0.0 for k in range(1, 5)}}, widths=[4])
    assert BASELINE == "rrs" and all(point.over_baseline is None for point in points)


def test_the_exact_node_verifiers_of_the_zoo_are_listed_and_no_control():
    names = node_verifiers()
    assert names[:2] == ["sps", "rrs"] and {"pooled", "pooled_wor", "resispec"} <= set(names)
    assert not {"ears", "resispec_paper", "rrs_skip_dup", "wor_unmasked"} & set(names)


def test_verification_costs_are_timed_per_k_at_the_padded_width():
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(8), size=3), rng.dirichlet(np.ones(8), size=3)
    seconds = verification_costs(p, q, {"rrs": 3, "sps": 1}, vocab=64)
    assert sorted(seconds["rrs"]) == [1, 2, 3] and sorted(seconds["sps"]) == [1]
    assert seconds["rrs"][1] == seconds["sps"][1]  # one candidate is sps, timed once
    assert all(value > 0 for value in seconds["rrs"].values())
    with pytest.raises(ValueError, match="vocabulary 4"):
        verification_costs(p, q, {"rrs": 1}, vocab=4)
    with pytest.raises(ValueError, match="one shape"):
        verification_costs(p, q[:, :4], {"rrs": 1}, vocab=64)
