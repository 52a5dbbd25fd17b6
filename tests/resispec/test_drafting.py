"""The drafting schemes' tuple laws against their definitions, in exact arithmetic."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from resispec.drafting import DRAFTING_SCHEMES


def successive_sampling(q: list[Fraction], drawn: tuple[int, ...]) -> Fraction:
    """``prod_i q(x_i) / (1 - q(x_<i))`` with exact fractions (0 for a repeat or a token of q = 0)."""
    probability, left = Fraction(1), Fraction(1)
    for i, token in enumerate(drawn):
        if token in drawn[:i] or left == 0:
            return Fraction(0)
        probability *= q[token] / left
        left -= q[token]
    return probability


@given(weights=st.lists(st.integers(0, 9), min_size=2, max_size=7).filter(lambda w: sum(1 for x in w if x) >= 1),
       k=st.integers(1, 4))
def test_wor_tuples_are_successive_sampling_without_replacement(weights, k):
    exact = [Fraction(w, sum(weights)) for w in weights]
    q = np.array([float(x) for x in exact])
    scheme = DRAFTING_SCHEMES["wor"]
    k = min(k, int(np.count_nonzero(q)))
    listed = dict(scheme.tuples(q, k))
    support = [i for i, w in enumerate(weights) if w]
    assert sorted(listed) == sorted(itertools.permutations(support, k))
    for drawn, probability in listed.items():
        assert abs(probability - float(successive_sampling(exact, drawn))) < 1e-15
    for drawn in itertools.product(range(len(weights)), repeat=k):  # repeats and q = 0 tokens included
        assert abs(scheme.probability(q, np.array(drawn)) - float(successive_sampling(exact, drawn))) < 1e-15
    assert abs(sum(listed.values()) - 1) < 1e-12
