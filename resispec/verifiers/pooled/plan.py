"""The pooled selection plan over rows: a priority-score selection among i.i.d. candidates whose law is ``t``.

Written once with the array API (``resispec.rows``) for B rows of ``(p, q)`` (NumPy or torch, CPU or
GPU); the single-instance API runs it at B = 1. Per row, tokens are ranked by ``p/q`` ascending
(``q = 0`` counts as ``inf``; equal ratios by token id); rank c owns the interval ``I_c = [F_c, F_c + q_c)``
of [0, 1), ``F_c`` = the q-mass of lower ranks (docs/pooled.md, "The construction"):

1. **Cut.** ``i* = argmax_i (Q_i^k - P_i)`` over ratio prefixes (first maximiser); ``H*`` = the ``i*``
   lowest ranks, ``m = q(H*)``, ``alpha* = 1 + p(H*) - m^k``.
2. **Max-ratio law.** The candidate of highest rank has law ``f_c = (F_c + q_c)^k - F_c^k = q_c phi_c``,
   ``phi_c = sum_{j<k} (F_c + q_c)^j F_c^(k-1-j)`` (the mean of ``k s^(k-1)`` over ``I_c``; no cancellation).
3. **Target law.** On ``H*``: ``t = max(p, mu q)`` with ``sum_{H*} t = f(H*) (= m^k)``; off ``H*``:
   ``t = min(p, lam q)`` with ``sum t = f(off H*) (= 1 - m^k)``. Each level is the root of a piecewise
   linear, monotone function of the level, solved exactly on its linear piece after one
   ``searchsorted`` over its values at the ratios.
4. **Pools.** In each block (``H*``, then the rest) the donations ``d = (f - t)+`` are matched to the
   receipts ``r = (t - f)+`` by the monotone coupling of their cumulative sums ``D``, ``R`` in rank
   order: each level interval ``[l, l')`` between consecutive values of ``{0} u D u R`` below
   ``total = min(D_end, R_end)`` is a pool ``(y, z, g = l' - l)`` from the donor ``y = min{y: D_y > l}`` to
   the receiver ``z = min{z: R_z > l}``, with ``z < y``; pieces that rounding turns the other way (or
   whose density gap is not positive, as for k = 1 where ``phi = 1``) are left out, as rounding-level
   mass only. Pool l swaps score mass ``M_l = g_l / (phi_y - phi_z)`` between the two intervals: token
   y sends mass ``M_l`` of its scores into ``I_z`` and token z sends ``M_l`` into ``I_y``. That moves
   exactly ``g_l`` of selection probability from y to z.
5. **Scores.** A candidate of token x takes its score on partner interval ``I_{c_l}`` with probability
   ``M_l / q_x`` for each pool l of x, else on ``I_x``; uniform within the interval. Every candidate's
   score is still Uniform(0, 1) and the scores are independent (each swap keeps the total score
   density 1 on both intervals), so the candidate with the highest score has law
   ``f - d + r = t``. The weights fit: ``sum_l M_l / q_x < 1`` for every token (see docs/pooled.md).

This is the two-stage draw of docs/pooled.md with its two stages merged: both give the same law of
each candidate's score interval, and the merged form needs no price and one uniform fewer. Because
the pools never mix blocks, the selected token lies in ``H*`` iff every candidate does.

Rows. Steps 1-3 are masked row operations (a where over ``rank < cut`` in place of NumPy's slices). In
step 4 the cumulative sums restart at the cut, and each row's levels ``[0, 0, D, R]`` (a 0 per block)
are sorted with their repeats (which add only level intervals of length 0, no pools) by exact integer
keys that put ``H*``'s levels first (``resispec.rows.block_keys``); the pools are then compacted to the
left of each row, padded to the row with most pools. On the CPU the rows go ``cpu_chunk_rows`` at a time.

Cost: per row one ratio sort, one sort of 2V + 2 integer keys (four sorted runs), a few dozen passes
over (B, V); one tuple then costs O(k log V).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from resispec.residual import supported_residual
from resispec.row_ratio_profile import RowRatioProfile
from resispec.rows import (
    BLOCK_BIT,
    Array,
    block_keys,
    block_levels,
    count_rows,
    cpu_chunk_rows,
    device_of,
    float_errors_allowed,
    gather_rows,
    namespace,
    positive_part_,
    searchsorted_rows,
    set_at_,
    stable_sort_rows,
    value_at,
)
from resispec.sampling import RowInverseCDF


@dataclass(frozen=True)
class SelectionPlan:
    """Steps 1-3 of B rows ``(p, q)`` and one k (``selection_target``): what pooled and partial_resolution share.

    Ranks are positions in ``order``; "by token id" arrays are indexed by token id, "by rank" arrays
    by rank. Shapes: B rows, V tokens.

    - ``k``: candidates per tuple; ``q`` (B, V): the validated draft (a reference, not a copy).
    - ``order`` (B, V): token ids by rank (``p/q`` ascending, ``q = 0`` as ``inf``, ties by id);
      ``rank`` (B, V): rank of each token id.
    - ``cut`` (B,): ``i*``; ``H* = order[:cut]``. ``inside_mass`` (B,): ``m = q(H*)``. ``alpha`` (B,): ``alpha*``.
    - ``mu``, ``lam`` (B,): the levels of ``t`` on and off ``H*`` (``mu`` is ``nan`` when ``H*`` is empty;
      ``lam`` is 0 when nothing off ``H*`` has q > 0).
    - ``density`` (B, V) by rank: ``phi_c = f_c / q_c``, mean of ``k s^(k-1)`` over ``I_c``.
    - ``max_ratio_law`` (B, V) by token id: ``f``. ``selection_law`` (B, V) by token id: ``t``.
    - ``accept`` (B, V) by token id: ``min(1, p/t)`` (1 where ``p >= t``, including ``t = 0``; 0 where p = 0).
    - ``residual`` (B, V) by token id: ``(p - t)+`` on p's support, or p itself when rounding left it no
      mass (``resispec.residual.supported_residual``); ``residual_sampler``: its ``RowInverseCDF``.
    """

    k: int
    q: Array
    order: Array
    rank: Array
    cut: Array
    inside_mass: Array
    alpha: Array
    mu: Array
    lam: Array
    density: Array
    max_ratio_law: Array
    selection_law: Array
    accept: Array
    residual: Array
    residual_sampler: RowInverseCDF


@dataclass(frozen=True)
class PooledPlan(SelectionPlan):
    """Everything ``pooled`` needs for every candidate tuple of B rows ``(p, q)`` and one k: the shared
    `SelectionPlan` and its pools. Shapes: B rows, V tokens, W = the most pools of any row.

    - ``pool_count`` (B,): pools per row; the pools of row b are its first ``pool_count[b]`` columns.
    - ``pool_donor``, ``pool_receiver`` (B, W) integer ranks, ``receiver < donor``; pools of ``H*`` first,
      then the rest, each block in level order (both ranks non-decreasing), so every token's pools
      are one contiguous range; padding V.
    - ``pool_transfer`` (B, W): ``g``, selection probability moved from donor to receiver (padding 0).
    - ``pool_mass`` (B, W): ``M = g / (phi_donor - phi_receiver)``, score mass swapped (padding 0).
    - ``pool_cumulative`` (B, W + 1): ``S = [0, cumsum(M)]`` (total <= 1: each donor's masses sum to
      less than its q).
    - ``pool_start``, ``pool_stop`` (B, V) by token id: the pools of token x are the columns
      ``pool_start[x] .. pool_stop[x] - 1`` (none for a token in no pool).
    - ``components``: memo of ``score_components``' table of every token (filled by the exact law).
    """

    pool_count: Array
    pool_donor: Array
    pool_receiver: Array
    pool_transfer: Array
    pool_mass: Array
    pool_cumulative: Array
    pool_start: Array
    pool_stop: Array
    components: dict[str, tuple[Array, Array] | None] = field(default_factory=dict, repr=False, compare=False)


def pooled_plan(p: Array, q: Array, k: int) -> PooledPlan:
    """The plan for validated float64 ``p``, ``q`` (B, V) and ``k >= 1`` (see the module docstring).

    On the CPU the rows go ``cpu_chunk_rows`` at a time (their passes then run in cache); the chunks'
    pools are padded to the widest.
    """
    batch = p.shape[0]
    rows = cpu_chunk_rows(p)
    fields = _join([_plan_rows(p[start:start + rows], q[start:start + rows], k) for start in range(0, batch, rows)])
    return PooledPlan(k=k, q=q, residual_sampler=RowInverseCDF(fields["residual"]), **fields)


def _plan_rows(p: Array, q: Array, k: int) -> dict[str, Array]:
    """Every field of ``PooledPlan`` but ``k``, ``q`` and the residual sampler, for rows of ``p``, ``q``."""
    fields, by_rank = selection_target(p, q, k)
    pools = _pools(by_rank["f"], by_rank["t"], fields["density"], fields["cut"], by_rank["inside"])
    return dict(fields, pool_start=gather_rows(pools.pop("start_by_rank"), fields["rank"]),
                pool_stop=gather_rows(pools.pop("stop_by_rank"), fields["rank"]), **pools)


def selection_target(p: Array, q: Array, k: int) -> tuple[dict[str, Array], dict[str, Array]]:
    """Steps 1-3 for rows of validated float64 ``p``, ``q`` (B, V): ``(fields, by_rank)``.

    ``fields``: ``order``, ``rank``, ``cut``, ``inside_mass``, ``alpha``, ``mu``, ``lam``, ``density``
    (the ``PooledPlan`` fields of those names) and ``max_ratio_law`` ``f``, ``selection_law`` ``t``,
    ``accept``, ``residual`` by token id. ``by_rank`` (B, V) each: ``f``, ``t`` and ``inside``
    (``rank < cut``). Shared by pooled (which pools every token) and partial_resolution (which resolves
    the pools of the drawn candidates only).
    """
    xp = namespace(p, q)
    size = p.shape[1]
    profile = RowRatioProfile(p, q)
    order = profile.order
    ranks = xp.arange(size, device=device_of(p))
    rank = set_at_(xp.empty_like(order), order, ranks)
    gain = profile.q_prefix ** k - profile.p_prefix
    cut = xp.argmax(gain, axis=-1)  # the first maximiser
    inside = ranks < cut[:, None]
    p_sorted, q_sorted = gather_rows(p, order), gather_rows(q, order)
    density = max_ratio_density(profile.q_prefix, k)
    f_sorted = q_sorted * density
    inside_target = xp.sum(xp.where(inside, f_sorted, 0.0), axis=-1)
    outside_target = xp.sum(xp.where(inside, 0.0, f_sorted), axis=-1)
    mu = _inside_level(profile, cut, inside, inside_target)
    lam = _outside_level(profile, p_sorted, q_sorted, cut, inside, outside_target)
    t_sorted = xp.where(inside, xp.maximum(p_sorted, mu[:, None] * q_sorted),
                        xp.minimum(p_sorted, lam[:, None] * q_sorted))
    f, t = set_at_(xp.empty_like(p), order, f_sorted), set_at_(xp.empty_like(p), order, t_sorted)
    fields = dict(
        order=order, rank=rank, cut=cut, inside_mass=value_at(profile.q_prefix, cut),
        alpha=1.0 - xp.maximum(value_at(gain, cut), 0.0), mu=mu, lam=lam, density=density, max_ratio_law=f,
        selection_law=t, accept=acceptance_ratio(p, t), residual=supported_residual(positive_part_(p - t), p),
    )
    return fields, dict(f=f_sorted, t=t_sorted, inside=inside)


_POOL_PADDING = {"pool_transfer": 0.0, "pool_mass": 0.0}
"""Padding of the pool columns past a row's pools (donor and receiver: V; cumulative: its last value)."""


def _join(chunks: list[dict[str, Array]]) -> dict[str, Array]:
    """The fields of row chunks as one batch, each chunk's pool columns padded to the widest."""
    if len(chunks) == 1:
        return chunks[0]
    xp = namespace(chunks[0]["pool_mass"])
    size, width = chunks[0]["order"].shape[1], max(chunk["pool_mass"].shape[1] for chunk in chunks)
    joined = {}
    for name, first in chunks[0].items():
        parts = [chunk[name] for chunk in chunks]
        if name.startswith("pool_") and first.ndim == 2 and name not in ("pool_start", "pool_stop"):
            extra = 1 if name == "pool_cumulative" else 0
            parts = [xp.concat([part, xp.broadcast_to(
                part[:, -1:] if name == "pool_cumulative" else xp.full((1, 1), _POOL_PADDING.get(name, size),
                                                                      dtype=part.dtype, device=device_of(part)),
                (part.shape[0], width + extra - part.shape[1]))], axis=-1) for part in parts]
        joined[name] = xp.concat(parts)
    return joined


def acceptance_ratio(p: Array, t: Array) -> Array:
    """``min(1, p/t)``: 1 where ``p >= t > 0`` or ``p > t = 0``, ``p/t`` where ``t > p``, 0 where ``p = 0``."""
    xp = namespace(p, t)
    below = p < t
    return xp.where(below, p / xp.where(below, t, 1.0), xp.astype(p > 0, p.dtype))


def max_ratio_density(q_prefix: Array, k: int) -> Array:
    """``phi_c = sum_{j<k} B^j A^(k-1-j)`` with ``A = Q_{c-1}``, ``B = Q_c`` ((B, V) by rank, from
    ``q_prefix`` (B, V + 1)).

    ``q_c phi_c = B^k - A^k`` is the probability that the highest of k i.i.d. ranks is c. Horner:
    ``phi^(1) = 1``, ``phi^(j+1) = B^j + A phi^(j)``.
    """
    xp = namespace(q_prefix)
    below, upto = q_prefix[:, :-1], q_prefix[:, 1:]
    density, power = xp.ones_like(below), xp.ones_like(below)
    for _ in range(k - 1):
        power *= upto
        density *= below
        density += power
    return density


def _inside_level(profile: RowRatioProfile, cut: Array, inside: Array, target: Array) -> Array:
    """``mu`` (B,) with ``sum_{rank < cut} max(p, mu q) = target``; NaN where ``H*`` is empty.

    ``h_in(mu) = target - P_cut`` where ``h_in(s) = sum_{rank < cut} (s q - p)+ = s Q_i - P_i`` on the piece
    of the i ranks below s; its value at the c-th ratio is the profile's ``h_at_ratio[c]`` for ``c < cut``
    (every rank below the cut has ``q > 0``: the first maximiser of ``Q^k - P`` never ends on a q = 0
    token), so one ``searchsorted`` finds the piece (at least 1, as ``h_at_ratio[0] = 0``).
    """
    xp = namespace(target)
    excess = xp.maximum(target - value_at(profile.p_prefix, cut), 0.0)
    heights = xp.where(inside, profile.h_at_ratio, xp.inf)
    piece = searchsorted_rows(heights, excess[:, None])[:, 0]
    with float_errors_allowed(target):  # 0/0 only where H* is empty
        mu = (excess + value_at(profile.p_prefix, piece)) / value_at(profile.q_prefix, piece)
    mu = xp.maximum(mu, value_at(profile.ratio, xp.maximum(piece - 1, 0)))
    return xp.where(cut > 0, mu, xp.nan)


def _outside_level(profile: RowRatioProfile, p_sorted: Array, q_sorted: Array, cut: Array, inside: Array,
                   target: Array) -> Array:
    """``lam`` (B,) with ``sum_{rank >= cut} min(p, lam q) = target``; 0 where nothing off ``H*`` has q > 0.

    On the piece where the first j ranks of the block have ratio ``<= lam``:
    ``g_out(lam) = p(those j) + lam q(the rest)``. The q-mass of the rest is a suffix sum taken from
    the top of the finite ratios (accurate when it is tiny and the ratios are huge; the zeros outside
    the block add exactly nothing). ``target <= p`` of the block's q > 0 tokens (optimality of the
    cut), so a finite ``lam`` exists; q = 0 tokens get ``t = 0``.
    """
    xp = namespace(target)
    size = p_sorted.shape[1]
    ratio = profile.ratio
    finite = xp.sum(xp.astype(ratio < xp.inf, xp.int64), axis=-1, keepdims=True)  # how many ratios are finite
    block = ~inside & (xp.arange(size, device=device_of(ratio)) < finite)
    q_above = xp.flip(xp.cumulative_sum(xp.flip(xp.where(block, q_sorted, 0.0), axis=-1), axis=-1), axis=-1)
    p_upto = xp.cumulative_sum(xp.where(block, p_sorted, 0.0), axis=-1)
    p_below = xp.concat([xp.zeros_like(p_upto[:, :1]), p_upto[:, :-1]], axis=-1)
    with float_errors_allowed(target):  # inf * 0 past the finite ratios, masked
        at_ratio = xp.where(block, p_below + ratio * q_above, xp.where(inside, -xp.inf, xp.inf))
    piece = searchsorted_rows(at_ratio, target[:, None])[:, 0]  # in [cut, finite]
    finite = finite[:, 0]
    at = xp.minimum(piece, size - 1)
    with float_errors_allowed(target):  # q_above = 0 only where the piece is past the finite ratios
        lam = (target - value_at(p_below, at)) / value_at(q_above, at)
    lower = xp.where(piece > cut, value_at(ratio, xp.maximum(piece - 1, 0)), 0.0)
    lam = xp.minimum(xp.maximum(lam, lower), value_at(ratio, at))
    lam = xp.where(piece == finite, value_at(ratio, xp.maximum(finite - 1, 0)), lam)
    return xp.where(finite <= cut, 0.0, lam)


def _pools(f: Array, t: Array, density: Array, cut: Array, inside: Array) -> dict[str, Array]:
    """The pool fields of ``PooledPlan`` from ``f``, ``t``, ``phi`` (B, V) by rank (module docstring),
    with each rank's pool range by rank (``start_by_rank``, ``stop_by_rank``).

    The cumulative sums ``D``, ``R`` restart at the cut. Each row's levels, ``[0, 0, D, R]`` (a 0 per
    block), are sorted stably in one pass by exact keys that put ``H*``'s levels first (``block_keys``),
    so a level's repeats are adjacent and only the last of them can carry a positive ``transfer``; there
    the donor ``min{y: D_y > l}`` is the count of ``D``'s entries at or before it, the receiver likewise
    (the last level of a row, ``max(D_end, R_end)`` off ``H*``, is never a pool). The pools are then
    compacted to the left of each row.
    """
    xp = namespace(f)
    batch, size = f.shape
    donated, received, total = donations_and_receipts(f, t, cut, inside)
    zeros = xp.zeros((batch, 2), dtype=f.dtype, device=device_of(f))
    outside = xp.concat([xp.zeros_like(inside[:, :1]), xp.ones_like(inside[:, :1]), ~inside, ~inside], axis=-1)
    keys, origin = stable_sort_rows(block_keys(xp.concat([zeros, donated, received], axis=-1), outside))
    levels = block_levels(keys)
    block_total = xp.where(keys[:, :-1] >= 1 << BLOCK_BIT, total[:, 1:], total[:, :1])
    # every level but the last against the next one (of the same block wherever the level is below its total)
    transfer = positive_part_(xp.minimum(levels[:, 1:], block_total) - levels[:, :-1])
    # the receipts' and the 0s' entries at or before each level (H*'s 0 sorts first, the other one after
    # H*'s 2 cut sums); the donations' entries are the rest
    received_count = xp.cumulative_sum(xp.astype(origin[:, :-1] >= size + 2, xp.int64), axis=-1)
    position = xp.arange(1, 2 * size + 2, device=device_of(f))
    zero_count = 1 + xp.astype(position > 2 * cut[:, None] + 1, xp.int64)
    donor = xp.minimum(position - received_count - zero_count, size - 1)
    receiver = xp.minimum(received_count, size - 1)
    gap = gather_rows(density, donor) - gather_rows(density, receiver)
    pool = (transfer > 0) & (gap > 0)  # phi is non-decreasing in rank, so gap > 0 puts the receiver below the donor
    with float_errors_allowed(gap):
        mass = xp.where(pool, transfer / gap, 0.0)
    counted = xp.astype(pool, xp.int64)
    running = xp.cumulative_sum(counted, axis=-1)  # the pools up to each level
    count = running[:, -1]
    width = max(int(xp.max(count)), 1)
    column = xp.where(pool, running - 1, width)
    compacted = {"pool_count": count}
    for name, values, padding in (("pool_donor", donor, size), ("pool_receiver", receiver, size),
                                  ("pool_transfer", transfer, 0.0), ("pool_mass", mass, 0.0)):
        row = xp.full((batch, width + 1), padding, dtype=values.dtype, device=device_of(values))
        compacted[name] = set_at_(row, column, values)[:, :width]  # column `width` collects the slots that are no pools
    cumulative = xp.cumulative_sum(compacted["pool_mass"], axis=-1)
    compacted["pool_cumulative"] = xp.concat([xp.zeros_like(cumulative[:, :1]), cumulative], axis=-1)
    # per rank, its pools' columns: donors and receivers are each non-decreasing along the columns, and no
    # rank both gives and takes, so a rank's pools end after those of every rank below it on its side
    gives, takes = count_rows(compacted["pool_donor"], size), count_rows(compacted["pool_receiver"], size)
    stop = xp.where(gives > 0, xp.cumulative_sum(gives, axis=-1), xp.cumulative_sum(takes, axis=-1))
    compacted["start_by_rank"], compacted["stop_by_rank"] = stop - xp.maximum(gives, takes), stop
    return compacted


def donations_and_receipts(f: Array, t: Array, cut: Array, inside: Array) -> tuple[Array, Array, Array]:
    """``(D, R, total)``: the cumulative donations ``(f - t)+`` and receipts ``(t - f)+`` (B, V) by rank,
    each restarting at the cut, and the coupled mass of each block ``min(D_end, R_end)`` (B, 2) (``H*``
    first)."""
    xp = namespace(f)
    batch = f.shape[0]
    sums, totals = _blockwise_cumsum(positive_part_(xp.concat([f - t, t - f])), xp.concat([cut, cut]),
                                     xp.concat([inside, inside]))  # donations, then receipts
    return sums[:batch], sums[batch:], xp.minimum(totals[:batch], totals[batch:])


def _blockwise_cumsum(values: Array, cut: Array, inside: Array) -> tuple[Array, Array]:
    """``(sums, totals)``: cumulative sums of ``values`` (B, V) by rank, restarting at the cut, and each
    block's total (B, 2) (``H*`` first)."""
    xp = namespace(values)
    plain = xp.cumulative_sum(values, axis=-1)  # H*'s sums up to the cut
    later = xp.cumulative_sum(xp.where(inside, 0.0, values), axis=-1)
    inside_total = xp.where(cut > 0, value_at(plain, xp.maximum(cut - 1, 0)), 0.0)
    return xp.where(inside, plain, later), xp.stack([inside_total, later[:, -1]], axis=-1)


def score_intervals(plan: PooledPlan, candidates: Array, u: Array) -> Array:
    """Ranks (B, k) of the intervals that hold the candidates' scores, one uniform each (``u`` (B, k)).

    With token x's pools in the columns ``[a, b)`` and ``S = pool_cumulative``: pool j's partner
    interval iff ``S_j <= S_a + u q_x < S_{j+1}``; ``S_a + u q_x >= S_b`` keeps x's own interval. One
    ``searchsorted`` over the row's S per candidate (S is non-decreasing and ``S_a + u q_x >= S_a``, so
    the count found, clamped to ``[a, b]``, is the one a search over x's own pools finds): O(k log V).
    """
    xp = namespace(candidates)
    own = gather_rows(plan.rank, candidates)
    start, stop = gather_rows(plan.pool_start, candidates), gather_rows(plan.pool_stop, candidates)
    reached = gather_rows(plan.pool_cumulative, start) + u * gather_rows(plan.q, candidates)
    slot = xp.minimum(xp.maximum(searchsorted_rows(plan.pool_cumulative[:, 1:], reached), start), stop)
    at = xp.minimum(slot, plan.pool_donor.shape[1] - 1)
    donor = gather_rows(plan.pool_donor, at)
    partner = xp.where(donor == own, gather_rows(plan.pool_receiver, at), donor)
    return xp.where(slot == stop, own, partner)


def select(plan: PooledPlan, candidates: Array, u_interval: Array, u_position: Array) -> Array:
    """Index (B,) of the candidate with the highest priority score in each row (``highest_score`` of the
    candidates' ``score_intervals``)."""
    return highest_score(score_intervals(plan, candidates, u_interval), u_position)


def highest_score(interval: Array, u_position: Array) -> Array:
    """Index (B,) of the highest score among candidates whose scores lie in the intervals of ranks
    ``interval`` (B, k) at relative positions ``u_position`` (B, k).

    Candidate i's score is ``F_c + u_position[:, i] q_c`` on its interval c; scores are compared as the
    pairs ``(c, u_position[:, i])``, which order them the same way without rounding. Exact ties
    (probability 0) go to the lowest index.
    """
    xp = namespace(interval)
    on_top = interval == xp.max(interval, axis=-1, keepdims=True)
    position = xp.where(on_top, u_position, -1.0)
    best = on_top & (position == xp.max(position, axis=-1, keepdims=True))
    return xp.argmax(xp.astype(best, xp.int8), axis=-1)  # the first maximum


COMPONENT_TABLE_LIMIT = 1 << 20
"""``score_components`` keeps every token's interval law in the plan (built on first use, for the exact law
of many tuples) when that table has at most this many entries (B V (most pools + 1))."""


def score_components(plan: PooledPlan, candidates: Array) -> tuple[Array, Array]:
    """``(interval ranks, probabilities)`` (B, k, n + 1) each: the law of each candidate's score interval
    (``score_intervals`` with U uniform), n = the most pools of any candidate (of any token when the
    plan keeps the table of every token, ``COMPONENT_TABLE_LIMIT``).

    For token x with pools ``a..b-1``: partner j has probability ``clip((S_{j+1} - S_a) / q_x, 0, 1) -
    clip((S_j - S_a) / q_x, 0, 1)``, its own interval (column ``b - a``) the rest; the columns past it are
    padding (rank V, probability 0). A token's ranks are distinct.
    """
    table = plan.components.get("table")
    if table is None and "table" not in plan.components:
        batch, size = plan.rank.shape
        xp = namespace(plan.rank)
        widest = int(xp.max(plan.pool_stop - plan.pool_start)) + 1
        every = xp.broadcast_to(xp.arange(size, device=device_of(plan.rank)), (batch, size))
        table = _components(plan, every) if batch * size * widest <= COMPONENT_TABLE_LIMIT else None
        plan.components["table"] = table
    if table is None:
        return _components(plan, candidates)
    return tuple(_token_rows(part, candidates) for part in table)


def _token_rows(table: Array, candidates: Array) -> Array:
    """``table[b, candidates[b, i], :]`` (B, k, n) from a per-token table (B, V, n)."""
    if type(table) is np.ndarray and table.shape[0] == 1:
        return table[0][candidates[0]][None]
    xp = namespace(table)
    index = xp.broadcast_to(candidates[..., None], (*candidates.shape, table.shape[-1]))
    return xp.take_along_axis(table, index, axis=1)


def _components(plan: PooledPlan, candidates: Array) -> tuple[Array, Array]:
    """``score_components`` computed for these candidates (B, m)."""
    xp = namespace(candidates)
    batch, k = candidates.shape
    size = plan.rank.shape[1]
    own = gather_rows(plan.rank, candidates)[..., None]
    start = gather_rows(plan.pool_start, candidates)[..., None]
    stop = gather_rows(plan.pool_stop, candidates)[..., None]
    count = stop - start
    columns = xp.arange(int(xp.max(count)) + 1, device=device_of(candidates))
    slot = xp.reshape(xp.minimum(start + columns, plan.pool_donor.shape[1] - 1), (batch, -1))
    pooled = columns < count
    reached = xp.reshape(gather_rows(plan.pool_cumulative, slot + 1), pooled.shape) - xp.reshape(
        gather_rows(plan.pool_cumulative, xp.reshape(start, (batch, k))), (batch, k, 1))
    with float_errors_allowed(reached):  # q_x = 0 only for a token that is never drafted
        reached = reached / gather_rows(plan.q, candidates)[..., None]
    reached = xp.where(pooled, xp.minimum(xp.maximum(reached, 0.0), 1.0), 1.0)
    probabilities = reached - xp.concat([xp.zeros_like(reached[..., :1]), reached[..., :-1]], axis=-1)
    donor = xp.reshape(gather_rows(plan.pool_donor, slot), pooled.shape)
    partner = xp.where(donor == own, xp.reshape(gather_rows(plan.pool_receiver, slot), pooled.shape), donor)
    ranks = xp.where(pooled, partner, xp.where(columns == count, own, size))
    return ranks, probabilities


@lru_cache(maxsize=16)
def _gauss_legendre(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights on [0, 1] exact for polynomials of degree ``<= k - 1`` (``ceil(k/2)`` nodes)."""
    nodes, weights = np.polynomial.legendre.leggauss((k + 1) // 2)
    return (nodes + 1.0) / 2.0, weights / 2.0


def selection_probabilities(plan: PooledPlan, candidates: Array) -> Array:
    """``s`` (B, k): the exact probability that candidate i has the highest score, given the candidates
    (``highest_score_probabilities`` of their ``score_components``)."""
    return highest_score_probabilities(*score_components(plan, candidates))


def highest_score_probabilities(ranks: Array, probabilities: Array) -> Array:
    """``s`` (B, k): the probability that candidate i has the highest score, from the law of each
    candidate's score interval (``ranks``, ``probabilities`` (B, k, n); the position within an interval
    uniform, independent across candidates).

    With ``pi_j(c)`` the probability that candidate j's score lies in interval c and ``C_j(c)`` that it
    lies below c: given candidate i's score in c at relative position v, candidate j lies below it with
    probability ``C_j(c) + pi_j(c) v``, so
    ``s_i = sum_c pi_i(c) int_0^1 prod_{j != i} (C_j(c) + pi_j(c) v) dv``,
    a polynomial of degree k - 1 in v, integrated exactly by Gauss-Legendre.
    """
    xp = namespace(ranks)
    batch, k, _ = ranks.shape
    mine = ranks[:, :, :, None, None]  # candidate i's interval c (B, k, n, 1, 1) against j's (B, 1, 1, k, n)
    theirs, their_probabilities = ranks[:, None, None, :, :], probabilities[:, None, None, :, :]
    below = xp.sum(xp.where(theirs < mine, their_probabilities, 0.0), axis=-1)  # C_j(c) (B, k, n, k)
    at = xp.sum(xp.where(theirs == mine, their_probabilities, 0.0), axis=-1)  # pi_j(c)
    nodes, weights = (xp.asarray(array, device=device_of(probabilities)) for array in _gauss_legendre(k))
    itself = xp.eye(k, dtype=xp.bool, device=device_of(probabilities))[None, :, None, :, None]  # j == i
    factors = xp.where(itself, 1.0, below[..., None] + at[..., None] * nodes)  # (B, k, n, k, nodes)
    integral = xp.sum(xp.prod(factors, axis=3) * weights, axis=-1)  # (B, k, n)
    return xp.sum(probabilities * integral, axis=-1)
