"""The pooled plan in exact rationals, and pooled's exact law (the float plan is ``resispec/verifiers/pooled/plan.py``).

Built from ``docs/pooled.md`` alone, without the float code, so that the two can be compared:

1. **Cut.** Ratio order (``resispec.theory.bounds.iid_optimum.ratio_order``), prefix sums ``P_i``, ``Q_i``;
   ``i* =`` the first maximiser of ``Q_i^k - P_i``; ``H* =`` the ``i*`` lowest ranks, ``m = Q_{i*}``,
   ``alpha* = 1 + P_{i*} - m^k``.
2. **Max-ratio law.** ``f_c = (F_c + q_c)^k - F_c^k`` with ``F_c = Q_c`` the q-mass of lower ranks;
   ``phi_c = f_c / q_c`` (``k F_c^(k-1)`` when ``q_c = 0``, its limit).
3. **Target law.** ``t = max(p, mu q)`` on ``H*`` with ``t(H*) = m^k``, ``t = min(p, lam q)`` off it
   with ``t(off H*) = 1 - m^k``; each level is the smallest root of a continuous, non-decreasing,
   piecewise-linear function with kinks at the ratios (``level``).
4. **Pools.** In each block, the monotone coupling of the cumulative donations ``(f - t)+`` and
   receipts ``(t - f)+`` in rank order: each level interval ``[l_a, l_{a+1})`` between consecutive
   breakpoints is a pool from the donor ``min{y : D_y > l_a}`` to the receiver ``min{z : R_z > l_a}``
   moving ``g = l_{a+1} - l_a``, with score mass ``M = g / (phi_y - phi_z)``. Nothing is dropped or
   clipped: a pool that runs the wrong way is kept, for the checks in ``resispec.theory.pooled.pooled`` to find.

Scores: a candidate of token x takes its score on the partner's interval of each pool l of x with
probability ``M_l / q_x``, else on its own interval, uniform inside (``interval_law``). Given the
candidates, the law of the highest score is a polynomial integral (``selection_given``), and
``pooled_law`` sums it over every i.i.d. tuple, then verifies the selected token against ``t``.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from resispec.theory.bounds.iid_optimum import ratio_order
from resispec.theory.common.exact import Law, pos

ZERO = Fraction(0)


@dataclass(frozen=True)
class Pool:
    """Donor rank ``y`` and receiver rank ``z`` (``z < y`` when right), the selection probability
    ``g`` moved from y to z, and the score mass ``M = g / (phi_y - phi_z)`` swapped between their
    intervals."""

    donor: int
    receiver: int
    transfer: Fraction
    mass: Fraction


@dataclass(frozen=True)
class ExactPlan:
    """The pooled plan of ``(p, q, k)``. ``order``: token ids by rank; ``cut = i*``; ``density``:
    ``phi`` by rank; ``f``, ``t``: the max-ratio and the target selection laws by token id; ``mu``,
    ``lam``: the levels (``None`` for an empty block)."""

    p: Law
    q: Law
    k: int
    order: tuple[int, ...]
    cut: int
    alpha: Fraction
    mu: Fraction | None
    lam: Fraction | None
    density: tuple[Fraction, ...]
    f: Law
    t: Law
    pools: tuple[Pool, ...]

    @property
    def V(self) -> int:
        return len(self.p)

    @property
    def rank(self) -> tuple[int, ...]:
        """The rank of each token id."""
        out = [0] * self.V
        for c, x in enumerate(self.order):
            out[x] = c
        return tuple(out)

    @property
    def inside(self) -> frozenset[int]:
        """``H*`` as token ids."""
        return frozenset(self.order[: self.cut])

    @property
    def m(self) -> Fraction:
        return sum((self.q[x] for x in self.inside), ZERO)

    def blocks(self) -> tuple[range, range]:
        """The rank ranges of ``H*`` and of the rest."""
        return range(self.cut), range(self.cut, self.V)


def prefix_sums(values: Sequence[Fraction]) -> list[Fraction]:
    """``[0, v_0, v_0 + v_1, ...]`` (length ``len(values) + 1``)."""
    return [ZERO, *itertools.accumulate(values)]


def level(F: Callable[[Fraction], Fraction], kinks: Sequence[Fraction], target: Fraction) -> Fraction:
    """The smallest ``s >= 0`` with ``F(s) = target``, for ``F`` continuous, non-decreasing and linear
    between consecutive points of ``{0} | kinks`` and beyond the last. Exact: linear interpolation on
    the piece that reaches the target. ``ValueError`` if no ``s`` reaches it."""
    points = sorted({ZERO, *kinks})
    if F(points[0]) >= target:
        if F(points[0]) == target:
            return points[0]
        raise ValueError(f"F(0) = {F(points[0])} already exceeds the target {target}")
    for a, b in zip(points, points[1:]):
        if F(b) >= target:
            return a + (target - F(a)) * (b - a) / (F(b) - F(a))
    last = points[-1]
    slope = F(last + 1) - F(last)
    if slope <= 0:
        raise ValueError(f"F never reaches the target {target} (sup {F(last)})")
    return last + (target - F(last)) / slope


def block_pools(f: Sequence[Fraction], t: Sequence[Fraction], density: Sequence[Fraction],
                block: range) -> list[Pool]:
    """The monotone coupling of donations ``(f - t)+`` to receipts ``(t - f)+`` over ``block`` (ranks;
    ``f``, ``t``, ``density`` by rank)."""
    ranks = list(block)
    donated = prefix_sums([pos(f[c] - t[c]) for c in ranks])[1:]
    received = prefix_sums([pos(t[c] - f[c]) for c in ranks])[1:]
    if not ranks:
        return []
    total = min(donated[-1], received[-1])
    levels = sorted({ZERO, *donated, *received})
    levels = [v for v in levels if v < total] + [total]
    pools = []
    for low, high in zip(levels, levels[1:]):
        y = ranks[next(j for j, v in enumerate(donated) if v > low)]
        z = ranks[next(j for j, v in enumerate(received) if v > low)]
        gap = density[y] - density[z]
        if gap == 0:
            raise ValueError(f"pool between ranks {y} and {z} with equal densities")
        pools.append(Pool(y, z, high - low, (high - low) / gap))
    return pools


def build(p: Law, q: Law, k: int, selection: Law | None = None) -> ExactPlan:
    """The plan of ``(p, q, k)`` (module docstring). ``selection`` replaces the target law ``t``
    (by token id) before the pools are built: a way to feed a wrong law through the construction."""
    V = len(p)
    order = tuple(ratio_order(p, q))
    ps, qs = [p[x] for x in order], [q[x] for x in order]
    P, Q = prefix_sums(ps), prefix_sums(qs)
    gains = [Q[i] ** k - P[i] for i in range(V + 1)]
    cut = gains.index(max(gains))
    m = Q[cut]
    alpha = 1 + P[cut] - m**k
    f_rank = [Q[c + 1] ** k - Q[c] ** k for c in range(V)]
    density = tuple(f_rank[c] / qs[c] if qs[c] else k * Q[c] ** (k - 1) for c in range(V))
    inside, outside = range(cut), range(cut, V)
    finite = [c for c in outside if qs[c] > 0]
    mu = lam = None
    if inside:
        mu = level(lambda s: sum((max(ps[c], s * qs[c]) for c in inside), ZERO),
                   [ps[c] / qs[c] for c in inside], m**k)
    if outside:
        lam = level(lambda s: sum((min(ps[c], s * qs[c]) for c in finite), ZERO),
                    [ps[c] / qs[c] for c in finite], 1 - m**k)
    t_rank = [max(ps[c], mu * qs[c]) for c in inside] + [min(ps[c], lam * qs[c]) for c in outside]
    if selection is not None:
        t_rank = [selection[x] for x in order]
    pools = block_pools(f_rank, t_rank, density, inside) + block_pools(f_rank, t_rank, density, outside)
    f, t = [ZERO] * V, [ZERO] * V
    for c, x in enumerate(order):
        f[x], t[x] = f_rank[c], t_rank[c]
    return ExactPlan(tuple(p), tuple(q), k, order, cut, alpha, mu, lam, density, tuple(f), tuple(t), tuple(pools))


def interval_law(plan: ExactPlan, x: int) -> dict[int, Fraction]:
    """Rank -> probability that a candidate of token ``x`` (``q_x > 0``) has its score in that rank's
    interval: the partner of each pool l of x with ``M_l / q_x``, the own interval the rest."""
    own = plan.rank[x]
    law = {own: Fraction(1)}
    for pool in plan.pools:
        if own not in (pool.donor, pool.receiver):
            continue
        partner = pool.receiver if pool.donor == own else pool.donor
        share = pool.mass / plan.q[x]
        law[partner] = law.get(partner, ZERO) + share
        law[own] -= share
    return law


def _poly_mul(a: list[Fraction], b: list[Fraction]) -> list[Fraction]:
    out = [ZERO] * (len(a) + len(b) - 1)
    for i, u in enumerate(a):
        for j, v in enumerate(b):
            out[i + j] += u * v
    return out


def selection_given(laws: Sequence[dict[int, Fraction]], candidates: Sequence[int]) -> dict[int, Fraction]:
    """Token -> probability that it is the highest-scoring candidate, given the candidates and their
    interval laws (``laws[i]`` for ``candidates[i]``; independent scores, uniform inside an interval).

    With ``pi_i(c)`` and ``C_i(c) = sum_{c' < c} pi_i(c')``, candidate i wins with its score at relative
    position v of interval c while every other j lies below: density ``pi_i(c) prod_{j != i} (C_j + pi_j v)``,
    a polynomial in v integrated exactly over [0, 1].
    """
    ranks = sorted(set().union(*laws))
    below = [ZERO] * len(laws)
    out: dict[int, Fraction] = {}
    for c in ranks:
        here = [law.get(c, ZERO) for law in laws]
        for i, share in enumerate(here):
            if share == 0:
                continue
            poly = [Fraction(1)]
            for j in range(len(laws)):
                if j != i:
                    poly = _poly_mul(poly, [below[j], here[j]])
            integral = sum((a / (n + 1) for n, a in enumerate(poly)), ZERO)
            out[candidates[i]] = out.get(candidates[i], ZERO) + share * integral
        below = [b + h for b, h in zip(below, here)]
    return out


@dataclass(frozen=True)
class PooledLaw:
    """pooled's exact behaviour summed over every i.i.d. tuple.

    ``selected``: law of the selected token; ``accepted``: probability that the selected token is
    accepted and emitted, per token; ``law``: the emitted law; ``collision``: probability that a
    rejection's residual draw equals one of the candidates; ``stranded``: rejection probability with an
    empty residual; ``misplaced``: ``E |P(selected in H*) - [all candidates in H*]|``; ``bad_intervals``:
    tokens whose interval law is not a distribution; ``multisets``: how many candidate multisets.
    """

    selected: Law
    accepted: Law
    law: Law
    collision: Fraction
    stranded: Fraction
    misplaced: Fraction
    bad_intervals: tuple[int, ...]
    multisets: int

    @property
    def acceptance(self) -> Fraction:
        return sum(self.accepted, ZERO)


def accept_probability(p_y: Fraction, t_y: Fraction) -> Fraction:
    """``min(1, p/t)``: 1 where ``p >= t`` (including ``t = 0``)."""
    return p_y / t_y if t_y > p_y else Fraction(1)


def pooled_law(plan: ExactPlan) -> PooledLaw:
    """Enumerate the candidate multisets of k i.i.d. draws from q (weight: multinomial times the
    product of q), select by the highest score (``selection_given``), accept the selected y with
    ``min(1, p(y)/t(y))``, else emit from ``norm((p - t)+)``."""
    p, q, t, V, k = plan.p, plan.q, plan.t, plan.V, plan.k
    drafted = [x for x in range(V) if q[x] > 0]
    laws = {x: interval_law(plan, x) for x in drafted}
    bad = tuple(x for x, law in laws.items() if any(v < 0 for v in law.values()) or sum(law.values()) != 1)
    accept = [accept_probability(p[y], t[y]) for y in range(V)]
    residual = [pos(p[y] - t[y]) for y in range(V)]
    residual_mass = sum(residual, ZERO)
    selected, accepted = [ZERO] * V, [ZERO] * V
    rejected = collision = misplaced = ZERO
    multisets = 0
    for tup in itertools.combinations_with_replacement(drafted, k):
        multisets += 1
        counts = Counter(tup)
        weight = Fraction(math.factorial(k), math.prod(math.factorial(n) for n in counts.values()))
        weight *= math.prod(q[x] ** n for x, n in counts.items())
        chosen = selection_given([laws[x] for x in tup], tup)
        reject = ZERO
        for y, s in chosen.items():
            selected[y] += weight * s
            accepted[y] += weight * s * accept[y]
            reject += s * (1 - accept[y])
        rejected += weight * reject
        if reject and residual_mass:
            collision += weight * reject * sum((residual[x] for x in counts), ZERO) / residual_mass
        all_inside = all(x in plan.inside for x in counts)
        chosen_inside = sum((s for y, s in chosen.items() if y in plan.inside), ZERO)
        misplaced += weight * abs(chosen_inside - all_inside)
    law = list(accepted)
    if residual_mass:
        law = [a + rejected * r / residual_mass for a, r in zip(accepted, residual)]
    return PooledLaw(
        tuple(selected), tuple(accepted), tuple(law), collision, ZERO if residual_mass else rejected,
        misplaced, bad, multisets,
    )
