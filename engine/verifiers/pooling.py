"""Batched pooled selection plans: torch port of ``resispec.pooling`` (plan, score intervals, selection).

Per node (row), every step of ``resispec.pooling.pooled_plan`` on all B nodes at once, by the same
float64 formulas (docs/pooled.md has the math):

1. **Ranks.** ``TorchRatioProfile``: tokens by ``p/q`` ascending (``q = 0`` as ``inf``, ties by id),
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
here is at most 1 + rounding) plus ``2^62`` off ``H*``, so the whole row is one sorted list and its
merge is two batched ``searchsorted`` of the events of one kind among those of the other. An event's
position in the merged list is its index among its own kind plus the number of the other kind's
events at or below it; equal levels of both kinds land on one slot (with the same donor and
receiver), the slot they leave free stays empty. The level after each slot is the next filled slot
of the same block (a reversed ``cummin``), or the block's total. Slots that are not pools keep mass
0, so the row's cumulative score mass ``S = [0, cumsum(M)]`` over the slots has the same values at
every pool as NumPy's over its compact pool list (adding 0 is exact), and token x's pools are the
slots from its first to its last pool (any slot in between that is not x's has zero width).

Every sum is a sequential ``cumsum`` as in NumPy, except the two block targets ``sum f`` (NumPy sums
pairwise) and ``Q^k`` (each library's ``pow`` may differ by an ulp): the plans agree to rounding, and
a decision can differ only where a uniform lies within rounding of a threshold.

Cost: one ratio sort per row, about twenty passes over (B, V) and three batched ``searchsorted`` of
about V values per row (O(V log V) per node, like NumPy), one host sync (the widest event list).
Per tuple (``score_intervals``): one ``searchsorted`` per candidate over its row's pools, O(k log V).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.verifiers.ratio_profile import TorchRatioProfile
from engine.verifiers.sampling import TorchInverseCDF

_BLOCK_BIT = 62
"""Sort keys of levels off ``H*`` get ``2^62`` added (float64 bit patterns of values < 2 stay below it)."""
_NO_KEY = torch.iinfo(torch.int64).max
"""Sort key of a padding entry: past every real level."""


@dataclass(frozen=True)
class TorchPooledPlan:
    """Everything ``pooled`` needs for every candidate tuple of B nodes (module docstring).

    Shapes: B nodes, V tokens, W pool slots (slots that are not pools have ``pool_mass`` 0).

    - ``rank`` (B, V) long by token id; ``cut`` (B,) long: ``i*`` (``H*`` = the ``cut`` lowest ranks).
    - ``selection_law`` (B, V) by token id: ``t``; ``accept`` (B, V) by id: ``min(1, p/t)`` (1 where
      ``p >= t``, including ``t = 0``).
    - ``residual``: the prepared inverse CDF of ``(p - t)+`` by id; ``has_residual`` (B,) bool: whether it
      has mass (without, a rejection emits the selected candidate, the contract's rule).
    - ``pool_donor``, ``pool_receiver`` (B, W) long ranks (meaningful where ``pool_mass > 0``):
      ``receiver < donor``; pools of ``H*`` first, each block in level order.
    - ``pool_mass`` (B, W): ``M``; ``pool_cumulative`` (B, W + 1): ``S = [0, cumsum(M)]``.
    - ``pool_start``, ``pool_stop`` (B, V) long by rank: rank c's pools lie in the slots
      ``[pool_start, pool_stop)`` (empty for a rank in no pool).
    """

    rank: torch.Tensor
    cut: torch.Tensor
    selection_law: torch.Tensor
    accept: torch.Tensor
    residual: TorchInverseCDF
    has_residual: torch.Tensor
    pool_donor: torch.Tensor
    pool_receiver: torch.Tensor
    pool_mass: torch.Tensor
    pool_cumulative: torch.Tensor
    pool_start: torch.Tensor
    pool_stop: torch.Tensor


def pooled_plan(p: torch.Tensor, q: torch.Tensor, k: int) -> TorchPooledPlan:
    """The plans of validated float64 ``p``, ``q`` (B, V) for k candidates (module docstring)."""
    profile = TorchRatioProfile(p, q)
    order = profile.order
    batch, size = p.shape
    ranks = torch.arange(size, device=p.device).expand(batch, size)
    rank = torch.empty_like(order).scatter_(1, order, ranks)
    cut = (profile.q_prefix.pow(k) - profile.p_prefix).argmax(dim=-1, keepdim=True)  # first maximiser
    inside = ranks < cut
    p_sorted, q_sorted = p.gather(1, order), q.gather(1, order)
    density = max_ratio_density(profile.q_prefix, k)
    f = q_sorted * density
    mu = _inside_level(profile, cut, inside, torch.where(inside, f, 0.0).sum(dim=-1, keepdim=True))
    lam = _outside_level(profile, p_sorted, q_sorted, cut, inside,
                         torch.where(inside, 0.0, f).sum(dim=-1, keepdim=True))
    t_sorted = torch.where(inside, torch.maximum(p_sorted, mu * q_sorted), torch.minimum(p_sorted, lam * q_sorted))
    t = torch.empty_like(t_sorted).scatter_(1, order, t_sorted)
    residual = (p - t).clamp(min=0.0)
    pools = _pools(f, t_sorted, density, cut, inside)
    return TorchPooledPlan(rank=rank, cut=cut[:, 0], selection_law=t, accept=_acceptance_ratio(p, t),
                           residual=TorchInverseCDF(residual), has_residual=(residual > 0).any(dim=-1), **pools)


def _acceptance_ratio(p: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """``min(1, p/t)``: 1 where ``p >= t`` (also where ``t = 0``), ``p/t`` where ``t > p``."""
    below = p < t
    return torch.where(below, p / torch.where(below, t, 1.0), 1.0)


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


def _inside_level(profile: TorchRatioProfile, cut: torch.Tensor, inside: torch.Tensor,
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


def _outside_level(profile: TorchRatioProfile, p_sorted: torch.Tensor, q_sorted: torch.Tensor, cut: torch.Tensor,
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


def _blockwise_cumsum(values: torch.Tensor, inside: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(sums, totals)``: cumulative sums of ``values`` (B, V) restarting at the cut, and each block's
    total (B, 2) (``H*`` first)."""
    sums_inside = torch.where(inside, values, 0.0).cumsum(dim=-1)
    sums_outside = torch.where(inside, 0.0, values).cumsum(dim=-1)
    return torch.where(inside, sums_inside, sums_outside), torch.cat([sums_inside[:, -1:], sums_outside[:, -1:]], dim=-1)


@dataclass(frozen=True)
class _Events:
    """The breakpoints of one cumulative sum, padded per row to the widest (E columns).

    ``rank`` (B, E + 1) long, the rank where the sum rises (``V`` past the last, one extra column of
    it so ``rank[:, e + 1]`` exists); ``level`` (B, E) the sum there; ``key`` (B, E) int64 sort key
    (``_NO_KEY`` in padding); ``inside`` (B, 1) how many lie in ``H*``; ``outside`` (B, E) bool.
    """

    rank: torch.Tensor
    level: torch.Tensor
    key: torch.Tensor
    inside: torch.Tensor
    outside: torch.Tensor

    @property
    def valid(self) -> torch.Tensor:
        return self.key != _NO_KEY


def _events(sums: torch.Tensor, cut: torch.Tensor, inside: torch.Tensor) -> _Events:
    """Ranks where ``sums`` (B, V, restarting at the cut) strictly increase, compacted to the left."""
    batch, size = sums.shape
    previous = torch.cat([sums.new_zeros(batch, 1), sums[:, :-1]], dim=-1)
    ranks = torch.arange(size, device=sums.device)
    rises = sums > torch.where(ranks == cut, 0.0, previous)
    width = int(rises.sum(dim=-1).max())  # the one host sync of the plan
    slot = torch.where(rises, rises.cumsum(dim=-1) - 1, width)  # column `width` collects the rest

    def compact(values: torch.Tensor, fill: float | int) -> torch.Tensor:
        return values.new_full((batch, width + 1), fill).scatter_(1, slot, values)[:, :width].contiguous()

    outside = (~inside).long()
    rank = torch.cat([compact(ranks.expand(batch, size), size), ranks.new_full((batch, 1), size)], dim=-1)
    return _Events(rank=rank, level=compact(sums, 0.0), key=compact(sums.view(torch.int64) + (outside << _BLOCK_BIT), _NO_KEY),
                   inside=(rises & inside).sum(dim=-1, keepdim=True), outside=compact(outside, 1).bool())


def _pools(f: torch.Tensor, t: torch.Tensor, density: torch.Tensor, cut: torch.Tensor,
           inside: torch.Tensor) -> dict[str, torch.Tensor]:
    """The pool fields of ``TorchPooledPlan`` from ``f``, ``t``, ``phi`` by rank (module docstring)."""
    batch, size = f.shape
    donated, donated_total = _blockwise_cumsum((f - t).clamp(min=0.0), inside)
    received, received_total = _blockwise_cumsum((t - f).clamp(min=0.0), inside)
    total = torch.minimum(donated_total, received_total)  # (B, 2): per block
    donors, receivers = _events(donated, cut, inside), _events(received, cut, inside)
    # Merged position: index among its own kind + the other kind's events at or below it + the 0
    # levels before it (one per block, the second after all events of H*).
    own_d = torch.arange(donors.key.shape[1], device=f.device)
    own_r = torch.arange(receivers.key.shape[1], device=f.device)
    cross_d = torch.searchsorted(receivers.key, donors.key, right=True)
    cross_r = torch.searchsorted(donors.key, receivers.key, right=True)
    zeros = torch.zeros_like(cut)
    width = donors.key.shape[1] + receivers.key.shape[1] + 2
    slot = torch.cat([
        zeros, donors.inside + receivers.inside + 1,
        torch.where(donors.valid, own_d + cross_d + 1 + donors.outside.long(), width),
        torch.where(receivers.valid, own_r + cross_r + 1 + receivers.outside.long(), width),
    ], dim=-1)
    level = torch.cat([f.new_zeros(batch, 2), donors.level, receivers.level], dim=-1)
    outside = torch.cat([zeros.bool(), ~zeros.bool(), donors.outside, receivers.outside], dim=-1)
    donor = torch.cat([donors.rank[:, :1], donors.rank.gather(1, donors.inside),
                       donors.rank[:, 1:], donors.rank.gather(1, cross_r)], dim=-1)
    receiver = torch.cat([receivers.rank[:, :1], receivers.rank.gather(1, receivers.inside),
                          receivers.rank.gather(1, cross_d), receivers.rank[:, 1:]], dim=-1)

    def place(values: torch.Tensor, fill: float | int | bool) -> torch.Tensor:
        return values.new_full((batch, width + 1), fill).scatter_(1, slot, values)[:, :width]

    level, outside, donor, receiver = place(level, 0.0), place(outside, False), place(donor, size), place(receiver, size)
    filled = place(torch.ones_like(slot, dtype=torch.bool), False)
    slots = torch.arange(width, device=f.device)
    # The next filled slot after each slot (width if none): a reversed running minimum.
    nearest = torch.where(filled, slots, width).flip(-1).cummin(dim=-1).values.flip(-1)
    following = torch.cat([nearest[:, 1:], nearest.new_full((batch, 1), width)], dim=-1)
    at = following.clamp(max=width - 1)
    block_total = total.gather(1, outside.long())
    same_block = (following < width) & (outside.gather(1, at) == outside)
    upper = torch.minimum(torch.where(same_block, level.gather(1, at), block_total), block_total)
    gap = density.gather(1, donor.clamp(max=size - 1)) - density.gather(1, receiver.clamp(max=size - 1))
    pool = filled & (level < block_total) & (receiver < donor) & (gap > 0)
    mass = torch.where(pool, (upper - level) / torch.where(pool, gap, 1.0), 0.0)
    cumulative = torch.cat([mass.new_zeros(batch, 1), mass.cumsum(dim=-1)], dim=-1)
    owner = torch.cat([torch.where(pool, donor, size), torch.where(pool, receiver, size)], dim=-1)
    both = torch.cat([slots, slots]).expand(batch, 2 * width)
    first = torch.full((batch, size + 1), width, dtype=torch.long, device=f.device)
    last = torch.full((batch, size + 1), -1, dtype=torch.long, device=f.device)
    first = first.scatter_reduce_(1, owner, both, "amin")[:, :size]
    stop = last.scatter_reduce_(1, owner, both, "amax")[:, :size] + 1
    return dict(pool_donor=donor, pool_receiver=receiver, pool_mass=mass, pool_cumulative=cumulative,
                pool_start=torch.where(stop > 0, first, 0), pool_stop=stop)


def score_intervals(plan: TorchPooledPlan, q: torch.Tensor, candidates: torch.Tensor,
                    u: torch.Tensor) -> torch.Tensor:
    """Ranks (B, k) of the intervals that hold the candidates' scores, one uniform each (``u`` (B, k)).

    With token x's pools in the slots ``[a, b)`` and ``S = pool_cumulative``: slot j's partner
    interval iff ``S_j <= S_a + u q_x < S_{j+1}``; ``S_a + u q_x >= S_b`` keeps x's own interval. One
    ``searchsorted`` over the row's S per candidate (S is non-decreasing, so the slot found, clamped
    to ``[a, b]``, is the one a search over x's own slots finds): O(k log V).
    """
    own = plan.rank.gather(1, candidates)
    start, stop = plan.pool_start.gather(1, own), plan.pool_stop.gather(1, own)
    cumulative = plan.pool_cumulative
    reach = cumulative.gather(1, start) + u * q.gather(1, candidates)
    slot = (torch.searchsorted(cumulative, reach, right=True) - 1).clamp(min=start, max=stop)
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
