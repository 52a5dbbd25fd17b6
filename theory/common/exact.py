"""Exact rational helpers shared by the theorem modules.

Distributions are tuples of ``Fraction`` (a ``Law``).  Random instances are drawn from an explicit
``random.Random(seed)`` with small integer weights, so every check is reproducible and its arithmetic
stays exact and fast.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from resispec.theory.common.arith import normalise

Law = tuple[Fraction, ...]


def pos(x: Fraction) -> Fraction:
    """The positive part ``(x)+ = max(x, 0)``."""
    return x if x > 0 else Fraction(0)


def from_weights(*weights: int) -> Law:
    """The law proportional to the non-negative integer ``weights``: ``from_weights(1, 3) = (1/4, 3/4)``."""
    return normalise([Fraction(w) for w in weights])


def random_distribution(rng: random.Random, V: int, *, zeros: bool = False, grain: int = 12) -> Law:
    """A random law on ``V`` tokens with integer weights in ``1..grain``; with ``zeros`` each weight
    is zero with probability 1/4 (at least one stays positive)."""
    while True:
        weights = [0 if zeros and rng.random() < 0.25 else rng.randint(1, grain) for _ in range(V)]
        if sum(weights) > 0:
            return normalise([Fraction(w) for w in weights])


@dataclass(frozen=True)
class Instance:
    """A target ``p``, a draft ``q`` on the same ``V`` tokens, and a candidate count ``k``."""

    p: Law
    q: Law
    k: int

    @property
    def V(self) -> int:
        return len(self.p)

    def __str__(self) -> str:
        return f"p={fmt(self.p)}, q={fmt(self.q)}, k={self.k}"


def instances(
    seed: int,
    count: int,
    V_range: tuple[int, int],
    k_range: tuple[int, int],
    *,
    zeros: bool = True,
    k_at_most_V: bool = False,
) -> list[Instance]:
    """``count`` seeded random instances with ``V`` and ``k`` uniform in the inclusive ranges."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        V = rng.randint(*V_range)
        k = rng.randint(*k_range)
        if k_at_most_V:
            k = min(k, V)
        p = random_distribution(rng, V, zeros=zeros)
        out.append(Instance(p, random_distribution(rng, V, zeros=zeros), k))
    return out


def fmt(values: Iterable[Fraction]) -> str:
    """``(2/5, 12/25, 3/25)``."""
    return "(" + ", ".join(str(v) for v in values) + ")"
