"""The partial_resolution plan over rows: pooled's selection law ``t``, its pools resolved only where drawn.

Our construction toward the optimum that Thomas & Pal's "Partial Resolution" (NeurIPS 2025) reaches; the
paper's own rule could not be read from this machine (docs/verifiers/partial_resolution.md). Its idea, as
the abstract states it, is kept: only the transport parameters that the drawn drafts need are solved.

Per row, the O(V log V) part is steps 1-3 of pooled (``resispec.verifiers.pooled.plan.selection_target``:
ratio order, cut ``H*``, max-ratio law ``f``, target law ``t``) and the cumulative donations
``D = cumsum (f - t)+`` and receipts ``R = cumsum (t - f)+`` in rank order, restarting at the cut
(``donations_and_receipts``). pooled then builds every pool of the monotone coupling of ``D`` and ``R``
(a second sort of 2V + 2 keys and its compaction). Here that coupling is never built:

**Local resolution.** In a block, the coupling's pools are the nonempty intersections of the donation
level intervals ``[D_{y-1}, D_y)`` with the receipt level intervals ``[R_{z-1}, R_z)`` below the coupled
total ``min(D_end, R_end)``, each moving its length ``g`` from donor y to receiver z. So the pools of one
token x are found from its own level interval alone: for a donor, the receivers whose intervals meet
``[D_{x-1}, D_x)`` are consecutive in rank order among the receivers, and two ``searchsorted``s over the
receivers' levels find them (a receiver likewise among the donors). Their score masses
``M = g / (phi_y - phi_z)`` are pooled's, so a candidate's score-interval law, the selection law ``t``, the
acceptance ``alpha*`` and the exact conditional laws are pooled's (``score_components``).

Per tuple, the k candidates' pools are resolved together, O(k (log V + n)) with n the most pools of a
candidate; the selection (``select``) and its exact probabilities (``selection_probabilities``) read
the same resolved components, so the decision and the law agree by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

from resispec.rows import (
    Array,
    block_keys,
    device_of,
    gather_rows,
    namespace,
    searchsorted_rows,
    set_at_,
)
from resispec.sampling import RowInverseCDF
from resispec.verifiers.pooled.plan import (
    SelectionPlan,
    donations_and_receipts,
    highest_score,
    highest_score_probabilities,
    selection_target,
)

KEY_PADDING = (1 << 63) - 1
"""The key of the padding past a row's donors or receivers: above every level key of both blocks."""


@dataclass(frozen=True)
class PartialPlan(SelectionPlan):
    """Everything partial_resolution needs for any candidate tuple of B rows ``(p, q)`` and one k.

    Shapes: B rows, V tokens. The shared `SelectionPlan` (pooled's steps 1-3), then:

    - ``donated``, ``received`` (B, V) by rank: ``D``, ``R``, cumulative donations ``(f - t)+`` and receipts
      ``(t - f)+`` restarting at the cut; ``donated_before``, ``received_before``: the same up to the rank
      before (0 at each block's first rank), so rank c's level interval is ``[before_c, after_c)``.
    - ``coupled`` (B, 2): ``min(D_end, R_end)`` per block (``H*`` first): no pool lies above it.
    - ``donors``, ``receivers`` (B, V): the ranks with a nonempty donation (receipt) level interval,
      ascending, padded with V; ``donor_keys``, ``receiver_keys`` (B, V) int64: their upper levels ``D``
      (``R``) as ``block_keys`` (``H*``'s before the rest's, each ascending), padded with ``KEY_PADDING``.
    """

    donated: Array
    received: Array
    donated_before: Array
    received_before: Array
    coupled: Array
    donors: Array
    receivers: Array
    donor_keys: Array
    receiver_keys: Array


def partial_plan(p: Array, q: Array, k: int) -> PartialPlan:
    """The plan for validated float64 ``p``, ``q`` (B, V) and ``k >= 1`` (module docstring): O(V log V)
    per row, no pool built."""
    xp = namespace(p, q)
    fields, by_rank = selection_target(p, q, k)
    cut, inside = fields["cut"], by_rank["inside"]
    donated, received, coupled = donations_and_receipts(by_rank["f"], by_rank["t"], cut, inside)
    first = xp.arange(p.shape[1], device=device_of(p)) == cut[:, None]  # the rest's first rank: sums restart
    donated_before, received_before = _before(donated, first), _before(received, first)
    donors, donor_keys = _members(donated > donated_before, donated, ~inside)
    receivers, receiver_keys = _members(received > received_before, received, ~inside)
    return PartialPlan(k=k, q=q, residual_sampler=RowInverseCDF(fields["residual"]), donated=donated,
                       received=received, donated_before=donated_before, received_before=received_before,
                       coupled=coupled, donors=donors, receivers=receivers, donor_keys=donor_keys,
                       receiver_keys=receiver_keys, **fields)


def _before(sums: Array, first: Array) -> Array:
    """The cumulative sums (B, V) shifted one rank up: 0 at rank 0 and at the ranks ``first`` (B, V) bool."""
    xp = namespace(sums)
    shifted = xp.concat([xp.zeros_like(sums[:, :1]), sums[:, :-1]], axis=-1)
    return xp.where(first, 0.0, shifted)


def _members(member: Array, levels: Array, outside: Array) -> tuple[Array, Array]:
    """``(ranks, keys)`` (B, V): the ranks where ``member`` (B, V) holds, ascending, and ``block_keys`` of
    their ``levels`` (outside: second block); padded with V and ``KEY_PADDING``."""
    xp = namespace(levels)
    batch, size = levels.shape
    ranks = xp.arange(size, device=device_of(levels))
    slot = xp.where(member, xp.cumulative_sum(xp.astype(member, xp.int64), axis=-1) - 1, size)
    listed = set_at_(xp.full((batch, size + 1), size, dtype=xp.int64, device=device_of(levels)), slot,
                     xp.broadcast_to(ranks, (batch, size)))[:, :size]
    at = xp.minimum(listed, size - 1)
    keys = block_keys(gather_rows(levels, at), gather_rows(outside, at))
    return listed, xp.where(listed < size, keys, KEY_PADDING)


def score_components(plan: PartialPlan, candidates: Array) -> tuple[Array, Array]:
    """``(interval ranks, reached)`` of each candidate's score (B, k, n + 1) each: columns ``0..n-1`` the
    partners of its pools in level order (rank V where a column is no pool), column n its own rank;
    ``reached`` the cumulative probabilities ``clip(sum_{l <= j} M_l / q_x, 0, 1)`` (1 in column n).

    For a donor x of rank c (level interval ``[lo, hi) = [D_{c-1}, min(D_c, coupled))``) the partners are
    the receivers z of its block with ``R_z > lo`` and ``R_{z-1} < hi``: from the first receiver above
    ``lo`` to the first at or above ``hi`` (``searchsorted`` over ``receiver_keys``); pool z moves
    ``g = min(hi, R_z) - max(lo, R_{z-1})`` with score mass ``g / (phi_c - phi_z)``. A receiver likewise
    among the donors. As in pooled, pieces that rounding leaves empty or turns the wrong way
    (``phi`` gap not positive) are no pools.
    """
    xp = namespace(candidates)
    size = plan.rank.shape[1]
    own = gather_rows(plan.rank, candidates)  # (B, k)
    outside = own >= plan.cut[:, None]
    donor = gather_rows(plan.donated, own) > gather_rows(plan.donated_before, own)
    coupled = xp.where(outside, plan.coupled[:, 1:], plan.coupled[:, :1])
    low = xp.where(donor, gather_rows(plan.donated_before, own), gather_rows(plan.received_before, own))
    high = xp.minimum(xp.where(donor, gather_rows(plan.donated, own), gather_rows(plan.received, own)), coupled)
    low_key, high_key = block_keys(low, outside), block_keys(xp.maximum(high, low), outside)
    first = xp.where(donor, searchsorted_rows(plan.receiver_keys, low_key),
                     searchsorted_rows(plan.donor_keys, low_key))
    last = xp.where(donor, searchsorted_rows(plan.receiver_keys, high_key, side="left"),
                    searchsorted_rows(plan.donor_keys, high_key, side="left"))
    count = xp.where(high > low, xp.maximum(last - first + 1, 0), 0)
    columns = xp.arange(int(xp.max(count)), device=device_of(candidates))
    slot = xp.minimum(first[..., None] + columns, size - 1)  # (B, k, n)
    giver = donor[..., None]
    partner = xp.where(giver, _gather(plan.receivers, slot), _gather(plan.donors, slot))
    at = xp.minimum(partner, size - 1)
    partner_low = xp.where(giver, _gather(plan.received_before, at), _gather(plan.donated_before, at))
    partner_high = xp.where(giver, _gather(plan.received, at), _gather(plan.donated, at))
    transfer = xp.minimum(high[..., None], partner_high) - xp.maximum(low[..., None], partner_low)
    own_density, partner_density = gather_rows(plan.density, own)[..., None], _gather(plan.density, at)
    gap = xp.where(giver, own_density - partner_density, partner_density - own_density)
    same_block = (at >= plan.cut[:, None, None]) == outside[..., None]
    pool = (columns < count[..., None]) & (partner < size) & same_block & (transfer > 0) & (gap > 0)
    mass = xp.where(pool, transfer / xp.where(pool, gap, 1.0), 0.0)
    drafted = gather_rows(plan.q, candidates)[..., None]  # q_x = 0 only for a token that is never drafted
    reached = xp.minimum(xp.cumulative_sum(mass, axis=-1) / xp.where(drafted > 0, drafted, 1.0), 1.0)
    ranks = xp.concat([xp.where(pool, partner, size), own[..., None]], axis=-1)
    return ranks, xp.concat([reached, xp.ones_like(drafted)], axis=-1)


def _gather(x: Array, index: Array) -> Array:
    """``x[b, index[b, i, j]]`` (B, k, n) from rows ``x`` (B, V)."""
    xp = namespace(index)
    return xp.reshape(gather_rows(x, xp.reshape(index, (index.shape[0], -1))), index.shape)


def _probabilities(reached: Array) -> Array:
    """Each column's probability (B, k, n + 1) from the cumulative ``reached``."""
    xp = namespace(reached)
    return reached - xp.concat([xp.zeros_like(reached[..., :1]), reached[..., :-1]], axis=-1)


def score_intervals(plan: PartialPlan, candidates: Array, u: Array) -> Array:
    """Ranks (B, k) of the intervals that hold the candidates' scores, one uniform each (``u`` (B, k)):
    column j of ``score_components`` iff ``reached_{j-1} <= u < reached_j`` (``reached_{-1} = 0``), so
    each column is drawn with exactly the probability the exact law gives it."""
    xp = namespace(candidates)
    ranks, reached = score_components(plan, candidates)
    column = xp.sum(xp.astype(reached <= u[..., None], xp.int64), axis=-1, keepdims=True)
    return xp.take_along_axis(ranks, xp.minimum(column, ranks.shape[-1] - 1), axis=-1)[..., 0]


def select(plan: PartialPlan, candidates: Array, u_interval: Array, u_position: Array) -> Array:
    """Index (B,) of the candidate with the highest priority score (pooled's ``highest_score``)."""
    return highest_score(score_intervals(plan, candidates, u_interval), u_position)


def selection_probabilities(plan: PartialPlan, candidates: Array) -> Array:
    """``s`` (B, k): the exact probability that candidate i has the highest score, given the candidates."""
    ranks, reached = score_components(plan, candidates)
    return highest_score_probabilities(ranks, _probabilities(reached))
