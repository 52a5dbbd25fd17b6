"""theory.pooled_wor: its checks reject what they must (an unachievable law, a wrong race value)."""

from __future__ import annotations

from fractions import Fraction as F

from theory.exact import from_weights
from theory.pooled_wor import all_in, hall_problems, race_value, wor_sets


def test_hall_check_rejects_a_law_no_rule_can_have():
    q = from_weights(3, 2, 1)
    sets = wor_sets(q, 2)
    assert not hall_problems(sets, 3, (q[0], q[1], q[2]))  # the first-drawn rule's law q
    assert hall_problems(sets, 3, (F(1), F(0), F(0)))  # token 0 selected always: {1, 2} drawn has mass > 0


def test_race_value_matches_the_set_probabilities():
    q = from_weights(3, 2, 1, 4)
    sets = wor_sets(q, 2)
    ones = {x: F(1) for x in range(4)}
    for y in range(4):
        assert race_value(q, ones, y, 2) == sum(prob for S, prob in sets.items() if y in S)
    outside_zero = {**ones, 3: F(0)}
    assert race_value(q, outside_zero, 0, 2) == all_in(sets, frozenset({0, 1, 2})) - all_in(sets, frozenset({1, 2}))
