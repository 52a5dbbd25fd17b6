"""Batched pooled selection plans: torch port of ``resispec.pooling`` (plan, score intervals, selection).

Per node (row), every step of ``resispec.pooling.pooled_plan`` on all B nodes at once, by the same
float64 formulas (docs/pooled.md has the math):

1. **Ranks.** ``RowRatioProfile``: tokens by ``p/q`` ascending (``q = 0`` as ``inf``, ties by id),
   prefix sums ``P``, ``Q``.
2. **Cut.** ``i* = argmax_i (Q_i^k - P_i)`` (first maximiser); ``H*`` = the ``i*`` lowest ranks.
3. **Max-ratio law.** ``f_c = q_c phi_c``, ``phi_c = sum_{j<k} Q_c^j Q_{c-1}^(k-1-j)`` (Horner).
4. **Target law.** ``t = max(p, mu q)`` on ``H*``, ``min(p, lam q)`` off it, each level the exact root
   on the linear piece that one batched ``searchsorted`` finds (suffix q-sums from the top off ``H*``).
5. **Pools.** In each block the donations ``d = (f - t)+`` are matched to the receipts ``r = (t - f)+``
   by the monotone coupling of their cumulative sums ``D``, ``R`` (each block's sums start at 0):
   one pool per distinct level ``l < total = min(D_end, R_end)`` of ``{0} u {D} u {R}``, from the
   donor ``min{y : D_y > l}`` to the receiver ``min{z : R_z > l}``, moving ``g = l_next - l`` of
   selection probability and swapping score mass ``M = g / (phi_y - phi_z)``; pieces with
   ``receiver >= donor`` or ``phi_y <= phi_z`` are dropped (rounding only, or k = 1), as in NumPy.

Batching the coupling. The distinct levels are the breakpoints ("events") of ``D`` and of ``R``
(ranks where the sum strictly increases) plus one 0 per block. Both blocks' events share one row:
a level's sort key is its float64 bit pattern (order-preserving for values in ``[0, 2)``; every sum
here is at most 1 + rounding) plus ``2^62`` off ``H*``, so the row's levels form one sorted list and
merging them takes two batched ``searchsorted`` of the events of one kind among those of the other.
An event's slot in the merged list is its index among its own kind plus the number of the other
kind's events at or below it (plus the 0 levels below it); equal levels of both kinds share a slot
(with the same donor and receiver) and leave the slot below it empty, so an empty slot is always
followed by a filled one, and the level after a slot is the next or second-next slot's, if in the
same block, else the block's total. Slots that are no pools get mass 0, so the row's cumulative
score mass ``S = cumsum(M)`` over the slots has NumPy's values at every pool (adding 0 is exact),
and token x's pools are the slots from its first to its last pool (a slot in between that is not
x's has zero width).

Parity. On CPU the plan is NumPy's bit for bit: the same ratio order (``sort_by_ratio``), the same
sequential cumulative sums, the two block targets ``sum f`` by NumPy's pairwise sums, the same
elementwise formulas. Only ``Q^k`` goes through torch's ``pow``, which can differ from NumPy's by an
ulp: the cut could then differ where two prefixes' gains tie within an ulp (never seen in the
tests). On other devices sums are taken in another order, so plans agree to rounding.

Cost: per row one ratio sort, a few dozen passes over (rows, V), two batched ``searchsorted`` of
about V values in all (the merge; O(V log V) per node, like NumPy), and two host syncs per chunk of
rows (the widest event lists). On CPU the rows go in chunks of about ``CPU_CHUNK_ELEMENTS`` entries, which keeps
those passes in cache. Per tuple (``score_intervals``): one ``searchsorted`` per candidate over its
row's pools, O(k log V).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from resispec.residual import supported_residual
from resispec.row_ratio_profile import RowRatioProfile
from resispec.sampling import RowInverseCDF

_BLOCK_BIT = 62
"""Sort keys of levels off ``H*`` get ``2^62`` added (float64 bit patterns of values < 2 stay below it)."""
_NO_KEY = torch.iinfo(torch.int64).max
"""Sort key of a padding entry: past every real level."""

CPU_CHUNK_ELEMENTS = 1 << 17
"""On CPU the ranked plan is built for about this many (B, V) entries at a time, so that its few dozen
passes over (rows, V) arrays run in cache (B = 64, V = 49152, two rows at a time: 3 to 4 times
faster than all rows at once on a shared 2-core EPYC; 1.3 to 1.4 times NumPy's plan row by row)."""


@dataclass(frozen=True)
class TorchPooledPlan:
    """Everything ``pooled`` needs for every candidate tuple of B nodes (module docstring).

    Shapes: B nodes, V tokens, W pool slots (a slot that is no pool has zero width).

    - ``rank`` (B, V) long by token id; ``cut`` (B,) long: ``i*`` (``H*`` = the ``cut`` lowest ranks).
    - ``selection_law`` (B, V) by token id: ``t``; ``accept`` (B, V) by id: ``min(1, p/t)`` (1 where
      ``p >= t``, including ``t = 0``; 0 where ``p = 0``).
    - ``residual``: the prepared inverse CDF of ``(p - t)+`` by id on p's support, or of p where rounding
      left that no mass (``resispec.residual.supported_residual``, the contract's fallback).
    - ``pool_donor``, ``pool_receiver`` (B, W) long ranks (meaningful where the slot has width):
      ``receiver < donor``; pools of ``H*`` first, each block in level order.
    - ``pool_reach`` (B, W): ``cumsum(M)`` over the slots (NumPy's ``S`` without its leading 0; slot
      j spans ``[S_j, S_{j+1})``, empty for a slot that is no pool).
    - ``pool_start``, ``pool_stop`` (B, V) long by rank: rank c's pools lie in the slots
      ``[pool_start, pool_stop)`` (empty for a rank in no pool).
    """

    rank: torch.Tensor
    cut: torch.Tensor
    selection_law: torch.Tensor
    accept: torch.Tensor
    residual: RowInverseCDF
    pool_donor: torch.Tensor
    pool_receiver: torch.Tensor
    pool_reach: torch.Tensor
    pool_start: torch.Tensor
    pool_stop: torch.Tensor


def pooled_plan(p: torch.Tensor, q: torch.Tensor, k: int) -> TorchPooledPlan:
    """The plans of validated float64 ``p``, ``q`` (B, V) for k candidates (module docstring).

    On CPU the ranked part (sort, cut, t, pools) is built ``max(1, CPU_CHUNK_ELEMENTS // V)`` rows at
    a time, elsewhere all rows at once; the chunks' pool slots are padded to the widest.
    """
    batch, size = p.shape
    rows = max(1, CPU_CHUNK_ELEMENTS // size) if p.device.type == "cpu" else batch
    chunks = [_ranked_plan(p[start:start + rows], q[start:start + rows], k) for start in range(0, batch, rows)]
    fields = {name: _join([chunk[name] for chunk in chunks], name == "pool_reach") for name in chunks[0]}
    t = fields["selection_law"]
    residual = supported_residual((p - t).clamp(min=0.0), p)
    return TorchPooledPlan(accept=_acceptance_ratio(p, t), residual=RowInverseCDF(residual), **fields)


def _join(parts: list[torch.Tensor], cumulative: bool) -> torch.Tensor:
    """The rows of ``parts`` in one tensor, narrower ones padded on the right: with their last column
    (a cumulative sum, which stays flat) or with 0 (pool slots that are no pools)."""
    if len(parts) == 1 or parts[0].ndim == 1:
        return torch.cat(parts) if len(parts) > 1 else parts[0]
    joined = parts[0].new_empty((sum(part.shape[0] for part in parts), max(part.shape[1] for part in parts)))
    start = 0
    for part in parts:
        rows, width = slice(start, start + part.shape[0]), part.shape[1]
        joined[rows, :width] = part
        joined[rows, width:] = part[:, -1:] if cumulative else 0
        start += part.shape[0]
    return joined


def _ranked_plan(p: torch.Tensor, q: torch.Tensor, k: int) -> dict[str, torch.Tensor]:
    """``rank``, ``cut``, ``selection_law`` and the pool fields of ``TorchPooledPlan`` for rows of p, q."""
    profile = RowRatioProfile(p, q)
    order = profile.order
    batch, size = p.shape
    ranks = torch.arange(size, device=p.device).expand(batch, size)
    rank = torch.empty_like(order).scatter_(1, order, ranks)
    cut = (profile.q_prefix.pow(k) - profile.p_prefix).argmax(dim=-1, keepdim=True)  # first maximiser
    inside = ranks < cut
    p_sorted, q_sorted = p.gather(1, order), q.gather(1, order)
    density = max_ratio_density(profile.q_prefix, k)
    f = q_sorted * density
    inside_target, outside_target = _block_sums(f, cut, inside)
    mu = _inside_level(profile, cut, inside, inside_target)
    lam = _outside_level(profile, p_sorted, q_sorted, cut, inside, outside_target)
    t_sorted = torch.where(inside, torch.maximum(p_sorted, mu * q_sorted), torch.minimum(p_sorted, lam * q_sorted))
    return dict(rank=rank, cut=cut[:, 0], selection_law=torch.empty_like(t_sorted).scatter_(1, order, t_sorted),
                **_pools(f, t_sorted, density, cut, inside))


def _block_sums(f: torch.Tensor, cut: torch.Tensor, inside: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``f(H*)`` and ``f(off H*)`` per row ((B, 1) each), the two levels' targets.

    On CPU NumPy's pairwise sums of the two slices, as ``resispec.pooling`` takes them (``mu`` is
    the root of ``target - P_cut``, a cancellation that turns an ulp of the target into a relative
    1e-10 of a tiny ``mu q``); elsewhere torch's sums, which may differ by an ulp.
    """
    if f.device.type != "cpu":
        return (torch.where(inside, f, 0.0).sum(dim=-1, keepdim=True),
                torch.where(inside, 0.0, f).sum(dim=-1, keepdim=True))
    rows = f.numpy()
    sums = torch.tensor([[row[:c].sum(), row[c:].sum()] for row, c in zip(rows, cut[:, 0].tolist())], dtype=f.dtype)
    return sums[:, :1].contiguous(), sums[:, 1:].contiguous()


def _acceptance_ratio(p: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """``min(1, p/t)``: 1 where ``p >= t`` (also where ``t = 0 < p``), ``p/t`` where ``t > p``, 0 where ``p = 0``."""
    below = p < t
    return torch.where(below, p / torch.where(below, t, 1.0), (p > 0).to(p.dtype))


def max_ratio_density(q_prefix: torch.Tensor, k: int) -> torch.Tensor:
    """``phi_c = sum_{j<k} B^j A^(k-1-j)``, ``A = Q_{c-1}``, ``B = Q_c`` ((B, V) by rank), by Horner:
    ``phi^(1) = 1``, ``phi^(j+1) = B^j + A phi^(j)`` (the NumPy steps, so the same values)."""
    below, upto = q_prefix[:, :-1], q_prefix[:, 1:]
    density, power = torch.ones_like(below), torch.ones_like(below)
    for _ in range(k - 1):
        power *= upto
        density *= below
        density += power
    return density


def _inside_level(profile: RowRatioProfile, cut: torch.Tensor, inside: torch.Tensor,
                  target: torch.Tensor) -> torch.Tensor:
    """``mu`` (B, 1) with ``sum_{rank < cut} max(p, mu q) = target``; NaN where ``H*`` is empty.

    ``h_in(mu) = target - P_cut``, ``h_in(s) = s Q_i - P_i`` on the piece of the i ranks below s: one
    ``searchsorted`` over h at the ratios of ``H*`` (the profile's ``h_at_ratio``, ``inf`` past the cut).
    """
    excess = (target - profile.p_prefix.gather(1, cut)).clamp(min=0.0)
    heights = torch.where(inside, profile.h_at_ratio, torch.inf)
    piece = torch.searchsorted(heights, excess, right=True)
    mu = (excess + profile.p_prefix.gather(1, piece)) / profile.q_prefix.gather(1, piece)
    mu = torch.maximum(mu, profile.ratio.gather(1, (piece - 1).clamp(min=0)))
    return torch.where(cut > 0, mu, torch.nan)


def _outside_level(profile: RowRatioProfile, p_sorted: torch.Tensor, q_sorted: torch.Tensor, cut: torch.Tensor,
                   inside: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``lam`` (B, 1) with ``sum_{rank >= cut} min(p, lam q) = target``; 0 where nothing off ``H*`` has q > 0.

    On the piece where the first j ranks of the block have ratio ``<= lam``:
    ``g_out(lam) = p(those j) + lam q(the rest)``, q's suffix sums taken from the top of the finite
    ratios (the NumPy sums: the zeros outside the block add exactly nothing).
    """
    size = p_sorted.shape[1]
    ratio = profile.ratio
    finite = torch.searchsorted(ratio, ratio.new_full((ratio.shape[0], 1), torch.inf))
    block = ~inside & (torch.arange(size, device=ratio.device) < finite)
    q_above = torch.where(block, q_sorted, 0.0).flip(-1).cumsum(dim=-1).flip(-1)
    p_upto = torch.where(block, p_sorted, 0.0).cumsum(dim=-1)
    p_below = torch.cat([p_upto.new_zeros(p_upto.shape[0], 1), p_upto[:, :-1]], dim=-1)
    at_ratio = torch.where(block, p_below + ratio * q_above, torch.where(inside, -torch.inf, torch.inf))
    piece = torch.searchsorted(at_ratio, target, right=True)  # in [cut, finite]
    at = piece.clamp(max=size - 1)
    lam = (target - p_below.gather(1, at)) / q_above.gather(1, at)
    lower = torch.where(piece > cut, ratio.gather(1, (piece - 1).clamp(min=0)), 0.0)
    lam = torch.minimum(torch.maximum(lam, lower), ratio.gather(1, at))
    lam = torch.where(piece == finite, ratio.gather(1, (finite - 1).clamp(min=0)), lam)
    return torch.where(finite <= cut, 0.0, lam)


def _blockwise_cumsum(values: torch.Tensor, cut: torch.Tensor,
                      inside: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(sums, totals)``: cumulative sums of ``values`` (B, V) by rank, restarting at the cut, and each
    block's total (B, 2) (``H*`` first). A row's plain cumsum is ``H*``'s up to the cut."""
    plain = values.cumsum(dim=-1)
    outside = torch.where(inside, 0.0, values).cumsum(dim=-1)
    inside_total = torch.where(cut > 0, plain.gather(1, (cut - 1).clamp(min=0)), 0.0)
    return torch.where(inside, plain, outside), torch.cat([inside_total, outside[:, -1:]], dim=-1)


@dataclass(frozen=True)
class _Events:
    """The breakpoints of one cumulative sum, compacted to the left and padded to the widest row.

    ``rank`` (B, E + 1) long: where the sum rises (0 in padding and in the extra last column, so that
    ``rank[:, e + 1]`` exists; a padded rank only ever serves a level that is no pool); ``key`` (B, E)
    int64 sort key of the sum there (``_NO_KEY`` in padding); ``inside`` (B, 1): how many lie in ``H*``.
    """

    rank: torch.Tensor
    key: torch.Tensor
    inside: torch.Tensor


def _level_keys(levels: torch.Tensor, outside: torch.Tensor) -> torch.Tensor:
    """Sort keys (int64) of levels in ``[0, 2)``: the float64 bit pattern, plus ``2^62`` off ``H*``."""
    return levels.view(torch.int64) + (outside.long() << _BLOCK_BIT)


def _key_levels(keys: torch.Tensor) -> torch.Tensor:
    """The float64 levels back from their sort keys (garbage for ``_NO_KEY``)."""
    return (keys & ~(1 << _BLOCK_BIT)).view(torch.float64)


def _events(sums: torch.Tensor, cut: torch.Tensor) -> _Events:
    """Ranks where ``sums`` (B, V, restarting at the cut) strictly increase (the sum's distinct levels)."""
    batch, size = sums.shape
    rises = torch.empty_like(sums, dtype=torch.bool)
    rises[:, 0] = sums[:, 0] > 0
    torch.gt(sums[:, 1:], sums[:, :-1], out=rises[:, 1:])
    at_cut = cut.clamp(max=size - 1)
    rises.scatter_(1, at_cut, torch.where(cut < size, sums.gather(1, at_cut) > 0, rises.gather(1, at_cut)))
    count = rises.cumsum(dim=-1)
    width = int(count[:, -1].max())  # the plan's one host sync
    ranks = torch.arange(size, device=sums.device).expand(batch, size)
    rank = torch.zeros((batch, width + 2), dtype=torch.long, device=sums.device)
    rank.scatter_(1, torch.where(rises, count - 1, width + 1), ranks)  # column width + 1 collects the rest
    key = _level_keys(sums.gather(1, rank[:, :width]), rank[:, :width] >= cut)
    key.masked_fill_(torch.arange(width, device=sums.device) >= count[:, -1:], _NO_KEY)
    return _Events(rank=rank[:, :width + 1], key=key,
                   inside=torch.where(cut > 0, count.gather(1, (cut - 1).clamp(min=0)), 0))


def _pools(f: torch.Tensor, t: torch.Tensor, density: torch.Tensor, cut: torch.Tensor,
           inside: torch.Tensor) -> dict[str, torch.Tensor]:
    """The pool fields of ``TorchPooledPlan`` from ``f``, ``t``, ``phi`` by rank (module docstring)."""
    batch, size = f.shape
    donated, donated_total = _blockwise_cumsum((f - t).clamp(min=0.0), cut, inside)
    received, received_total = _blockwise_cumsum((t - f).clamp(min=0.0), cut, inside)
    total = torch.minimum(donated_total, received_total)  # (B, 2): per block
    donors, receivers = _events(donated, cut), _events(received, cut)
    width = donors.key.shape[1] + receivers.key.shape[1] + 2
    # Two columns past the slots: the first collects the padding's writes, both then read as empty.
    key = torch.full((batch, width + 2), _NO_KEY, dtype=torch.long, device=f.device)
    donor, receiver = torch.zeros_like(key), torch.zeros_like(key)
    # The 0 level of each block: slot 0 for H*, the slot after all of H*'s events for the rest.
    zero_slots = torch.cat([torch.zeros_like(cut), donors.inside + receivers.inside + 1], dim=-1)
    key.scatter_(1, zero_slots, torch.tensor([0, 1 << _BLOCK_BIT], device=f.device).expand(batch, 2))
    donor.scatter_(1, zero_slots, donors.rank.gather(1, torch.cat([torch.zeros_like(cut), donors.inside], dim=-1)))
    receiver.scatter_(1, zero_slots,
                      receivers.rank.gather(1, torch.cat([torch.zeros_like(cut), receivers.inside], dim=-1)))
    # An event's slot: its index among its own kind + the other kind's events at or below it + the
    # 0 levels at or below it. Equal levels of both kinds share a slot (and its donor and receiver)
    # and leave the slot just below it empty; so every empty slot before the last level is followed
    # by a filled one.
    for own, other, own_is_donor in ((donors, receivers, True), (receivers, donors, False)):
        crossed = torch.searchsorted(other.key, own.key, right=True)
        index = torch.arange(own.key.shape[1], device=f.device)
        slot = index + crossed + 1 + (own.key >= 1 << _BLOCK_BIT).long()
        slot = torch.where(own.key == _NO_KEY, width, slot)
        key.scatter_(1, slot, own.key)
        (donor if own_is_donor else receiver).scatter_(1, slot, own.rank[:, 1:])  # the next rise of its own
        (receiver if own_is_donor else donor).scatter_(1, slot, other.rank.gather(1, crossed))  # the other's
    key[:, width] = _NO_KEY
    after, second = key[:, 1:width + 1], key[:, 2:]
    key, donor, receiver = key[:, :width], donor[:, :width], receiver[:, :width]
    outside = key >= 1 << _BLOCK_BIT
    level = _key_levels(key)
    following = torch.where(after != _NO_KEY, after, second)  # the next level's key, if any
    block_total = torch.where(outside, total[:, 1:], total[:, :1])
    same_block = (following != _NO_KEY) & ((following >= 1 << _BLOCK_BIT) == outside)
    upper = torch.minimum(torch.where(same_block, _key_levels(following), block_total), block_total)
    gap = density.gather(1, donor) - density.gather(1, receiver)
    pool = (key != _NO_KEY) & (level < block_total) & (receiver < donor) & (gap > 0)
    mass = torch.where(pool, (upper - level) / gap, 0.0)
    slots = torch.arange(width, device=f.device).expand(batch, width)
    first = torch.full((batch, size + 1), width, dtype=torch.long, device=f.device)
    stop = torch.zeros((batch, size + 1), dtype=torch.long, device=f.device)
    for member in (donor, receiver):
        owner = torch.where(pool, member, size)  # column `size` collects the slots that are no pools
        first.scatter_reduce_(1, owner, slots, "amin")
        stop.scatter_reduce_(1, owner, slots + 1, "amax")
    first, stop = first[:, :size], stop[:, :size]
    return dict(pool_donor=donor, pool_receiver=receiver, pool_reach=mass.cumsum(dim=-1),
                pool_start=torch.where(stop > 0, first, 0), pool_stop=stop)


def score_intervals(plan: TorchPooledPlan, q: torch.Tensor, candidates: torch.Tensor,
                    u: torch.Tensor) -> torch.Tensor:
    """Ranks (B, k) of the intervals that hold the candidates' scores, one uniform each (``u`` (B, k)).

    With token x's pools in the slots ``[a, b)`` and ``S = [0, pool_reach]``: slot j's partner
    interval iff ``S_j <= S_a + u q_x < S_{j+1}``; ``S_a + u q_x >= S_b`` keeps x's own interval. One
    ``searchsorted`` over the row's S per candidate (S is non-decreasing, so the slot found, clamped
    to ``[a, b]``, is the one a search over x's own slots finds): O(k log V).
    """
    own = plan.rank.gather(1, candidates)
    start, stop = plan.pool_start.gather(1, own), plan.pool_stop.gather(1, own)
    before = torch.where(start > 0, plan.pool_reach.gather(1, (start - 1).clamp(min=0)), 0.0)
    slot = torch.searchsorted(plan.pool_reach, before + u * q.gather(1, candidates), right=True)
    slot = slot.clamp(min=start, max=stop)
    at = slot.clamp(max=plan.pool_donor.shape[1] - 1)
    donor = plan.pool_donor.gather(1, at)
    partner = torch.where(donor == own, plan.pool_receiver.gather(1, at), donor)
    return torch.where(slot == stop, own, partner)


def select(plan: TorchPooledPlan, q: torch.Tensor, candidates: torch.Tensor, u_interval: torch.Tensor,
           u_position: torch.Tensor) -> torch.Tensor:
    """Index (B,) long of the candidate with the highest priority score in each row.

    Candidate i's score is ``F_c + u_position[:, i] q_c`` on its interval c (``score_intervals``);
    scores are compared as the pairs ``(c, u_position[:, i])``, which order them the same way without
    rounding. Exact ties (probability 0) go to the lowest index.
    """
    interval = score_intervals(plan, q, candidates, u_interval)
    on_top = interval == interval.amax(dim=-1, keepdim=True)
    position = torch.where(on_top, u_position, -1.0)
    best = on_top & (position == position.amax(dim=-1, keepdim=True))
    return best.int().argmax(dim=-1)  # the first maximum
