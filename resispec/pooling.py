"""The pooled selection plan: a priority-score selection among i.i.d. candidates whose law is ``t``.

Tokens are ranked by ``p/q`` ascending (``q = 0`` counts as ``inf``; equal ratios by token id); rank c
owns the interval ``I_c = [F_c, F_c + q_c)`` of [0, 1), ``F_c`` = the q-mass of lower ranks. Built once
per ``(p, q, k)`` (O(V log V), see ``pooled_plan``):

1. **Cut.** ``i* = argmax_i (Q_i^k - P_i)`` over ratio prefixes (first maximiser); ``H*`` = the ``i*``
   lowest ranks, ``m = q(H*)``, ``alpha* = 1 + p(H*) - m^k`` (``resispec.bounds.optimal_cut``).
2. **Max-ratio law.** The candidate of highest rank has law ``f_c = (F_c + q_c)^k - F_c^k = q_c phi_c``,
   ``phi_c = sum_{j<k} (F_c + q_c)^j F_c^(k-1-j)`` (the mean of ``k s^(k-1)`` over ``I_c``; no cancellation).
3. **Target law.** On ``H*``: ``t = max(p, mu q)`` with ``sum_{H*} t = f(H*) (= m^k)``; off ``H*``:
   ``t = min(p, lam q)`` with ``sum t = f(off H*) (= 1 - m^k)``. Each level is the root of a piecewise
   linear, monotone function of the level, solved exactly on its linear piece after one
   ``searchsorted`` over its values at the ratios.
4. **Pools.** In each block (``H*``, then the rest) the donations ``d = (f - t)+`` are matched to the
   receipts ``r = (t - f)+`` by the monotone coupling of their cumulative sums in rank order: each level
   interval of length ``g`` where donor rank y and receiver rank z overlap is a pool ``(y, z, g)``, with
   ``z < y``. Pool l swaps score mass ``M_l = g_l / (phi_y - phi_z)`` between the two intervals: token y
   sends mass ``M_l`` of its scores into ``I_z`` and token z sends ``M_l`` into ``I_y``. That moves exactly
   ``g_l`` of selection probability from y to z.
5. **Scores.** A candidate of token x takes its score on partner interval ``I_{c_l}`` with probability
   ``M_l / q_x`` for each pool l of x, else on ``I_x``; uniform within the interval. Every candidate's
   score is still Uniform(0, 1) and the scores are independent (each swap keeps the total score
   density 1 on both intervals), so the candidate with the highest score has law
   ``f - d + r = t``. The weights fit: ``sum_l M_l / q_x < 1`` for every token (see docs/pooled.md).

This is a two-stage draw (join pool l with probability ``g / (f_y - c q_y)`` resp.
``g / (c q_z - f_z)`` at a price c, then the donor's or the receiver's interval) with the two stages
merged: both give the same law of each candidate's score interval, and the merged form needs no
price and one uniform fewer (docs/pooled.md, "The construction", after step 6).

Because the pool cumulative sums never mix blocks, the selected token lies in ``H*`` iff every
candidate does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from resispec.bounds import optimal_cut
from resispec.ratio_profile import RatioProfile
from resispec.residual import supported_residual
from resispec.sampling import InverseCDF


@dataclass(frozen=True)
class PooledPlan:
    """Everything ``pooled`` needs for every candidate tuple of one ``(p, q, k)``.

    Ranks are positions in ``order``; "by token id" arrays are indexed by token id, "by rank" arrays
    by rank. Shapes: V = vocabulary size, n = number of pools.

    - ``k``: candidates per tuple; ``q`` (V,): the validated draft (a reference, not a copy).
    - ``order`` (V,): token ids by rank (``p/q`` ascending, ``q = 0`` as ``inf``, ties by id);
      ``rank`` (V,): rank of each token id (``rank[order] = arange(V)``).
    - ``cut``: ``i*``; ``H* = order[:cut]``. ``inside_mass``: ``m = q(H*)``. ``alpha``: ``alpha*``.
    - ``mu``, ``lam``: the levels of ``t`` on and off ``H*`` (``mu`` is ``nan`` when ``H*`` is empty;
      ``lam`` is 0 when nothing off ``H*`` has q > 0).
    - ``density`` (V,) by rank: ``phi_c = f_c / q_c``, mean of ``k s^(k-1)`` over ``I_c``.
    - ``max_ratio_law`` (V,) by token id: ``f``. ``selection_law`` (V,) by token id: ``t``.
    - ``accept`` (V,) by token id: ``min(1, p/t)`` (1 where ``p >= t``, including ``t = 0``).
    - ``residual`` (V,) by token id: ``(p - t)+`` on p's support, or p itself when rounding left it no
      mass (``resispec.residual.supported_residual``); ``residual_sampler``: its ``InverseCDF``.
    - ``pool_donor``, ``pool_receiver`` (n,) int64 ranks, ``receiver < donor``; pools of ``H*`` first,
      then the rest, each block in level order (both ranks non-decreasing), so every token's pools
      are one contiguous range.
    - ``pool_transfer`` (n,): ``g``, selection probability moved from donor to receiver.
    - ``pool_mass`` (n,): ``M = g / (phi_donor - phi_receiver)``, score mass swapped.
    - ``pool_cumulative`` (n + 1,): ``S = [0, cumsum(M)]`` (total <= 1: each donor's masses sum to
      less than its q).
    - ``pool_start``, ``pool_stop`` (V,) int64 by token id: the pools of token x are
      ``range(pool_start[x], pool_stop[x])`` (empty for a token in no pool).
    - ``components``: memo of ``score_components`` per token (filled lazily by the exact law).
    """

    k: int
    q: np.ndarray
    order: np.ndarray
    rank: np.ndarray
    cut: int
    inside_mass: float
    alpha: float
    mu: float
    lam: float
    density: np.ndarray
    max_ratio_law: np.ndarray
    selection_law: np.ndarray
    accept: np.ndarray
    residual: np.ndarray
    residual_sampler: InverseCDF
    pool_donor: np.ndarray
    pool_receiver: np.ndarray
    pool_transfer: np.ndarray
    pool_mass: np.ndarray
    pool_cumulative: np.ndarray
    pool_start: np.ndarray
    pool_stop: np.ndarray
    components: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def pool_count(self) -> int:
        return int(self.pool_donor.size)


def pooled_plan(p: np.ndarray, q: np.ndarray, k: int) -> PooledPlan:
    """The plan for validated ``p``, ``q`` (shape (V,)) and ``k >= 1`` (see the module docstring)."""
    profile = RatioProfile(p, q)
    order, size = profile.order, p.size
    rank = np.empty(size, dtype=np.int64)
    rank[order] = np.arange(size)
    cut, alpha = optimal_cut(profile, k)
    p_sorted, q_sorted = p[order], q[order]
    density = max_ratio_density(profile.q_prefix, k)
    f_sorted = q_sorted * density
    mu = _inside_level(profile, cut, float(f_sorted[:cut].sum()))
    lam = _outside_level(profile, p_sorted, q_sorted, cut, float(f_sorted[cut:].sum()))
    t_sorted = np.empty(size)
    np.maximum(p_sorted[:cut], mu * q_sorted[:cut], out=t_sorted[:cut])
    np.minimum(p_sorted[cut:], lam * q_sorted[cut:], out=t_sorted[cut:])
    pools = [_block_pools(f_sorted, t_sorted, density, start, stop) for start, stop in ((0, cut), (cut, size))]
    donor, receiver, transfer, mass = (np.concatenate(parts) for parts in zip(*pools))
    start_by_rank, stop_by_rank = _pool_ranges(donor, receiver, size)
    f, t = np.empty(size), np.empty(size)
    f[order], t[order] = f_sorted, t_sorted
    residual = supported_residual(np.maximum(p - t, 0.0), p)
    return PooledPlan(
        k=k, q=q, order=order, rank=rank, cut=cut, inside_mass=float(profile.q_prefix[cut]), alpha=alpha,
        mu=mu, lam=lam, density=density, max_ratio_law=f, selection_law=t,
        accept=acceptance_ratio(p, t),
        residual=residual, residual_sampler=InverseCDF(residual),
        pool_donor=donor, pool_receiver=receiver, pool_transfer=transfer, pool_mass=mass,
        pool_cumulative=np.concatenate(([0.0], np.cumsum(mass))),
        pool_start=start_by_rank[rank], pool_stop=stop_by_rank[rank],
    )


def acceptance_ratio(p: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``min(1, p/t)``: 1 where ``p >= t > 0`` or ``p > t = 0``, ``p/t`` where ``t > p``, 0 where ``p = 0``."""
    accept = (p > 0).astype(np.float64)
    below = p < t
    np.divide(p, t, out=accept, where=below)
    return accept


def max_ratio_density(q_prefix: np.ndarray, k: int) -> np.ndarray:
    """``phi_c = sum_{j<k} B^j A^(k-1-j)`` with ``A = Q_{c-1}``, ``B = Q_c`` (shape (V,), by rank).

    ``q_c phi_c = B^k - A^k`` is the probability that the highest of k i.i.d. ranks is c. Horner:
    ``phi^(1) = 1``, ``phi^(j+1) = B^j + A phi^(j)``.
    """
    below, upto = q_prefix[:-1], q_prefix[1:]
    density, power = np.ones(below.size), np.ones(below.size)
    for _ in range(k - 1):
        power *= upto
        density *= below
        density += power
    return density


def _inside_level(profile: RatioProfile, cut: int, target: float) -> float:
    """``mu`` with ``sum_{rank < cut} max(p, mu q) = target``: ``h_in(mu) = target - P_cut`` where
    ``h_in(s) = sum_{rank < cut} (s q - p)+ = s Q_i - P_i`` on the piece of the i ranks below s.

    The value of ``h_in`` at the c-th ratio is the profile's ``h_at_ratio[c]`` for ``c < cut`` (every
    rank below the cut has ``q > 0``: the first maximiser of ``Q^k - P`` never ends on a q = 0 token).
    """
    if cut == 0:
        return float("nan")
    excess = max(target - profile.p_prefix[cut], 0.0)
    piece = int(np.searchsorted(profile.h_at_ratio[:cut], excess, side="right"))
    mu = (excess + profile.p_prefix[piece]) / profile.q_prefix[piece]
    return float(max(mu, profile.ratio[piece - 1]))


def _outside_level(profile: RatioProfile, p_sorted: np.ndarray, q_sorted: np.ndarray, cut: int,
                   target: float) -> float:
    """``lam`` with ``sum_{rank >= cut} min(p, lam q) = target``.

    On the piece where the first j ranks of the block have ratio ``<= lam``:
    ``g_out(lam) = p(those j) + lam q(the rest)``. The q-mass of the rest is a suffix sum taken from
    the top (accurate when it is tiny and the ratios are huge). ``target <= p`` of the block's q > 0
    tokens (optimality of the cut), so a finite ``lam`` exists; q = 0 tokens get ``t = 0``.
    Returns 0 when the block has no q-mass (nothing off ``H*`` is ever drafted).
    """
    finite = int(np.searchsorted(profile.ratio, np.inf))
    if finite <= cut:
        return 0.0
    ratio = profile.ratio[cut:finite]
    q_above = np.cumsum(q_sorted[cut:finite][::-1])[::-1]
    p_below = np.concatenate(([0.0], np.cumsum(p_sorted[cut:finite])))
    at_ratio = p_below[:-1] + ratio * q_above
    piece = int(np.searchsorted(at_ratio, target, side="right"))
    if piece == ratio.size:
        return float(ratio[-1])
    lam = (target - p_below[piece]) / q_above[piece]
    return float(min(max(lam, ratio[piece - 1] if piece else 0.0), ratio[piece]))


_NO_POOLS = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0), np.empty(0))


def _block_pools(f: np.ndarray, t: np.ndarray, density: np.ndarray, start: int,
                 stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(donor ranks, receiver ranks, transfers g, score masses M)`` of the ranks ``[start, stop)``.

    Monotone coupling: with ``D``, ``R`` the cumulative donations and receipts, the level interval
    ``[l_a, l_{a+1})`` between consecutive breakpoints of both is matched from the donor
    ``min{y: D_y > l_a}`` to the receiver ``min{z: R_z > l_a}``. Prefix domination of t over f in
    the block (``R_j >= D_j``) makes ``z < y``; pieces that rounding turns the other way (or whose
    density gap is not positive, as for k = 1 where ``phi = 1``) are left out: they carry rounding-level
    mass only.
    """
    if stop <= start:
        return _NO_POOLS
    donations = np.maximum(f[start:stop] - t[start:stop], 0.0)
    receipts = np.maximum(t[start:stop] - f[start:stop], 0.0)
    donated, received = np.cumsum(donations), np.cumsum(receipts)
    total = min(donated[-1], received[-1])
    if not total > 0:
        return _NO_POOLS
    levels = np.unique(np.concatenate(([0.0], donated, received)))
    lower = levels[levels < total]
    transfer = np.diff(lower, append=total)
    donor = start + np.searchsorted(donated, lower, side="right")
    receiver = start + np.searchsorted(received, lower, side="right")
    gap = density[donor] - density[receiver]
    keep = (receiver < donor) & (gap > 0)
    return donor[keep], receiver[keep], transfer[keep], transfer[keep] / gap[keep]


def _pool_ranges(donor: np.ndarray, receiver: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per rank, the contiguous range of its pools (as donor or as receiver; never both).

    Both rank lists are non-decreasing, so a rank's pools start after those of every lower rank.
    """
    gives, takes = np.bincount(donor, minlength=size), np.bincount(receiver, minlength=size)
    stop = np.where(gives > 0, np.cumsum(gives), np.cumsum(takes))
    return stop - np.maximum(gives, takes), stop


def _partner(plan: PooledPlan, pool: int, own_rank: int) -> int:
    donor = int(plan.pool_donor[pool])
    return int(plan.pool_receiver[pool]) if donor == own_rank else donor


def score_interval(plan: PooledPlan, token: int, u: float) -> int:
    """The rank of the interval that holds the score of a candidate of ``token``, from one uniform.

    With the token's pools ``a..b-1`` and ``S = pool_cumulative``: pool j's partner interval iff
    ``S_j <= S_a + u q_x < S_{j+1}``; ``u q_x >= S_b - S_a`` keeps the token's own interval.
    One ``searchsorted`` over the token's pools: O(log V).
    """
    own, start, stop = int(plan.rank[token]), int(plan.pool_start[token]), int(plan.pool_stop[token])
    if start == stop:
        return own
    cumulative = plan.pool_cumulative
    pool = start + int(np.searchsorted(cumulative[start + 1:stop + 1], cumulative[start] + u * plan.q[token],
                                       side="right"))
    return own if pool == stop else _partner(plan, pool, own)


def score_components(plan: PooledPlan, token: int) -> tuple[np.ndarray, np.ndarray]:
    """``(interval ranks, probabilities)``: the law of ``score_interval(plan, token, U)``, U uniform.

    Partner j has probability ``clip((S_{j+1} - S_a) / q_x, 0, 1) - clip((S_j - S_a) / q_x, 0, 1)``;
    the own interval (last) the rest. Ranks are distinct. Memoised per token in the plan.
    """
    cached = plan.components.get(token)
    if cached is not None:
        return cached
    own, start, stop = int(plan.rank[token]), int(plan.pool_start[token]), int(plan.pool_stop[token])
    count = stop - start
    ranks, probabilities = np.empty(count + 1, dtype=np.int64), np.empty(count + 1)
    ranks[count], probabilities[count] = own, 1.0
    if count:
        cumulative = plan.pool_cumulative
        reached = (cumulative[start + 1:stop + 1] - cumulative[start]) / plan.q[token]
        np.clip(reached, 0.0, 1.0, out=reached)
        donors = plan.pool_donor[start:stop]
        ranks[:count] = np.where(donors == own, plan.pool_receiver[start:stop], donors)
        probabilities[0] = reached[0]
        np.subtract(reached[1:], reached[:-1], out=probabilities[1:count])
        probabilities[count] = 1.0 - reached[-1]
    plan.components[token] = ranks, probabilities
    return ranks, probabilities


def select(plan: PooledPlan, candidates: np.ndarray, u_interval: np.ndarray, u_position: np.ndarray) -> int:
    """Index of the candidate with the highest priority score.

    Candidate i's score is ``F_c + u_position[i] q_c`` on the interval ``c = score_interval(plan,
    candidates[i], u_interval[i])``; scores are compared as the pairs ``(c, u_position[i])``, which
    order them the same way without rounding. Exact ties (probability 0) go to the lowest index.
    """
    best, best_key = 0, (-1, -1.0)
    for index, token in enumerate(candidates.tolist()):
        key = (score_interval(plan, token, float(u_interval[index])), float(u_position[index]))
        if key > best_key:
            best, best_key = index, key
    return best


@lru_cache(maxsize=16)
def _gauss_legendre(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights on [0, 1] exact for polynomials of degree ``<= k - 1`` (``ceil(k/2)`` nodes)."""
    nodes, weights = np.polynomial.legendre.leggauss((k + 1) // 2)
    return (nodes + 1.0) / 2.0, weights / 2.0


def selection_law(plan: PooledPlan, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(tokens, probabilities)``: the exact law of the selected token given the candidates.

    Distinct tokens x with multiplicities ``n_x``; ``pi_x(c)`` the probability that x's score lies in
    interval c and ``C_x(c)`` that it lies below c. Given the winning score in c at relative position
    v, every other candidate lies below it with probability ``C + pi v``, so
    ``P(winner is x, in c) = n_x pi_x(c) int_0^1 (C_x + pi_x v)^(n_x - 1) prod_{x' != x} (C_x' + pi_x' v)^n_x' dv``,
    a polynomial of degree k - 1 in v, integrated exactly by Gauss-Legendre.
    """
    tokens, counts = np.unique(candidates, return_counts=True)
    tables = [score_components(plan, int(token)) for token in tokens]
    intervals = np.unique(np.concatenate([ranks for ranks, _ in tables]))
    inside = np.zeros((tokens.size, intervals.size))
    for row, (ranks, probabilities) in enumerate(tables):
        inside[row, np.searchsorted(intervals, ranks)] = probabilities
    below = np.cumsum(inside, axis=1) - inside
    nodes, weights = _gauss_legendre(plan.k)
    cdf = below[:, :, None] + inside[:, :, None] * nodes  # (distinct, intervals, nodes)
    exponents = counts[None, :] - np.eye(tokens.size, dtype=np.int64)
    others = np.prod(cdf[None] ** exponents[:, :, None, None], axis=1)
    return tokens, counts * np.einsum("xc,xcn,n->x", inside, others, weights)
