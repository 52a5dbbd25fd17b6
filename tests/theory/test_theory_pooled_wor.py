"""resispec.theory.pooled_wor.pooled_wor: its checks reject what they must (an unachievable law, a wrong race value)."""

from __future__ import annotations

from fractions import Fraction as F

from resispec.theory.common.exact import from_weights
from resispec.theory.pooled_wor.pooled_wor import (
    all_in,
    greedy_order,
    greedy_vertex,
    hall_problems,
    mixture_selection,
    race_value,
    wor_sets,
)


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


def test_mixture_pricing_picks_the_largest_price_in_every_set():
    """The greedy order (price ascending) is what makes pricing exact: the reversed order selects the
    cheapest candidate of each set and falls short of the set-by-set best."""
    q = from_weights(3, 2, 1, 4)
    sets = wor_sets(q, 2)
    price = (F(1), F(3), F(0), F(2))
    best = sum(prob * max(price[x] for x in S) for S, prob in sets.items())
    value = lambda order: sum(a * b for a, b in zip(price, greedy_vertex(sets, 4, order)))  # noqa: E731
    assert value(greedy_order(price)) == best
    assert value(greedy_order(price)[::-1]) < best


def test_mixture_selection_splits_one_set_by_the_weights():
    S = frozenset({0, 2})
    chosen = mixture_selection(S, {0: F(1, 4), 2: F(3, 4)}, F(1, 2), [((2, 0, 1), F(1, 3)), ((0, 1, 2), F(1, 6))])
    assert chosen == {0: F(1, 8) + F(1, 3), 2: F(3, 8) + F(1, 6)}
