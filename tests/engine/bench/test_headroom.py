"""Headroom: the attainable speedup of a hypothetical draft under measured costs, and its inverse."""

from __future__ import annotations

import math

import pytest

from resispec.engine.bench.headroom import attainable, measured_point, median_costs, required_acceptance
from resispec.engine.decode.calibration import Calibration
from resispec.engine.decode.tree_search import MAX_DEPTH


def costs(target: dict[int, float], verify: float = 0.0, bookkeeping: float = 0.0,
          acceptance: list[float] | None = None, draft: float = 0.0, plain: float = 0.0) -> Calibration:
    """A calibration with the given target cost curve, u(k) = ``verify`` for every k, v = ``bookkeeping`` per
    round and v_plain = ``plain`` per plain token."""
    return Calibration(acceptance or [0.5, 0.6, 0.7, 0.8], target, {1: draft, 16: draft}, bookkeeping, 100,
                       [1.0] * MAX_DEPTH, {k: verify for k in range(1, 5)}, plain)


FLAT = {1: 1.0, 32: 1.0}
LINEAR = {1: 1.0, 32: 32.0}


def test_a_perfect_free_draft_on_a_flat_forward_emits_the_deepest_chain_per_forward():
    headroom = attainable(costs(FLAT), 1.0, 0.0)
    assert headroom.choice.branching == (1,) * MAX_DEPTH
    assert headroom.speedup == pytest.approx(MAX_DEPTH + 1, rel=1e-12)


def test_where_each_node_costs_a_forward_no_draft_reaches_any_gain():
    assert attainable(costs(LINEAR), 1.0, 0.0).speedup == pytest.approx(1.0, rel=1e-12)
    assert required_acceptance(costs(LINEAR), 0.0, 1.01) is None


def test_required_acceptance_solves_the_closed_form_of_a_flat_forward():
    # flat t, free draft, no verification or bookkeeping: the deepest chain, speedup (1 - a^13) / (1 - a)
    def speedup(a: float) -> float:
        return (1 - a ** (MAX_DEPTH + 1)) / (1 - a)

    goal = 1.5
    low, high = 0.0, 0.99
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if speedup(middle) < goal else (low, middle)
    found = required_acceptance(costs(FLAT), 0.0, goal)
    assert found == pytest.approx(high, abs=1e-10)
    assert attainable(costs(FLAT), found, 0.0).speedup >= goal > attainable(costs(FLAT), found - 1e-9, 0.0).speedup


def test_costs_raise_the_acceptance_a_goal_needs():
    measured = costs({1: 1.0, 2: 1.3, 4: 1.7, 8: 3.1, 32: 11.0}, verify=0.05, bookkeeping=0.05)
    needs = [required_acceptance(measured, fraction, 1.5) for fraction in (0.0, 0.1, 0.2)]
    assert all(a is not None for a in needs) and needs == sorted(needs) and needs[0] < needs[-1]
    assert required_acceptance(measured, 0.6, 1.5) is None  # a draft of 0.6 x the target never pays 1.5x here
    # the tree model can only add shapes, so it never needs more
    assert required_acceptance(measured, 0.1, 1.5, trees=True) <= needs[1] + 1e-12


def test_median_costs_take_each_figure_median_and_points_use_them():
    first = costs({1: 1.0, 32: 10.0}, verify=0.1, bookkeeping=0.1, acceptance=[0.3], draft=0.2, plain=0.5)
    second = costs({1: 2.0, 32: 30.0}, verify=0.3, bookkeeping=0.3, plain=0.05)
    third = costs({1: 3.0, 32: 20.0}, verify=0.2, bookkeeping=0.2, plain=0.1)
    median = median_costs([first, second, third])
    assert median.target_seconds == {1: 2.0, 32: 20.0} and median.round_seconds == 0.2
    assert median.plain_round_seconds == 0.1
    assert median.verify_seconds == {k: 0.2 for k in range(1, 5)} and median.acceptance == [0.3]
    point = measured_point("first", first, median)
    assert point.acceptance == 0.3 and point.draft_fraction == pytest.approx(0.1)
    plain = 2.0 + 0.1  # t(1) + v_plain, the medians
    assert point.speedup == pytest.approx(point.choice.tokens_per_second * plain)
    with pytest.raises(ValueError, match="no calibration"):
        median_costs([])


@pytest.mark.parametrize("acceptance, fraction", [(-0.1, 0.0), (1.5, 0.0), (0.5, -1.0), (0.5, math.nan)])
def test_out_of_range_inputs_are_refused(acceptance, fraction):
    with pytest.raises(ValueError):
        attainable(costs(FLAT), acceptance, fraction)
