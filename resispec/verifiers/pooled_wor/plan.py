"""The pooled_wor plan: a cut, then a thinned scan per block, whose selection law ``t`` is exact.

Candidates are k draws without replacement (WOR) from q, seen as the set S of the first k arrivals of
independent clocks ``E_x ~ Exp(q_x)`` (docs/resispec_wor.md, section 6). Built once per ``(p, q, k)``
(docs/pooled_wor.md has the derivation):

1. **Cut.** Tokens ranked by ``p/q`` ascending (``RatioProfile``). ``H`` is a ratio prefix minimising
   ``p(H) + 1 - P_k(H)`` (``resispec.bounds_wor.wor_prefix_values``), ``P_k(H)`` the probability that
   all k draws fall in H. The *inside block* is active iff ``S`` lies in ``H``, the
   *outside block* otherwise; the selected candidate lies in the active block, so ``t(H) = P_k(H)``.
2. **Scan.** Each block visits its candidates in a fixed order (ratio ascending or descending) and
   selects the visited candidate y with probability ``theta_y``; if every
   visited candidate declines, the last visited is selected. With ``D_y`` = P(y in S, block active,
   every earlier-scanned candidate in S declined) and ``L_y`` = the part of ``D_y`` with no
   later-scanned candidate in S (the fallback's share), y is selected with probability
   ``t_y = L_y + theta_y (D_y - L_y)``. The thinning is greedy along the scan:
   ``theta_y = clip((p_y - L_y) / (D_y - L_y), 0, 1)``, so ``t_y = p_y`` whenever ``L_y <= p_y <= D_y``.
3. **D and L by the race.** For weights ``w_x`` in [0, 1] (``1 - theta`` on earlier-scanned tokens,
   1 on later ones for D and 0 for L, 1 on the other block's tokens for the outside block and 0 for
   the inside block), ``E[1{y in S} prod_{x in S - y} w_x]`` is the probability that the k-th "good"
   arrival (token x good with probability ``w_x``, y good and rung) comes before any bad one:

       int_0^inf [X^(k-1)] ( B_{-y}(T) r_y(T) X + q_y e_y(T) A_{-y}(T) ) dT,
       A = prod_x (e_x + w_x r_x X),  B = sum_z q_z e_z w_z prod_{x != z} (e_x + w_x r_x X)  (mod X^k),

   ``e_x = exp(-q_x T)``, ``r_x = 1 - e_x``: ``A`` tracks "no bad arrival, j good arrivals by T", ``B``
   the flux of a good arrival at T. Pairs compose as ``(A1, B1)(A2, B2) = (A1 A2, A1 B2 + B1 A2)``, with
   positive coefficients only (nothing cancels); ``resispec.race`` holds the pair algebra, the grid
   and the compiled kernels. One forward pass along each scan carries the earlier-scanned pair (the
   thetas are known there); the later-scanned pairs come from a backward pass that keeps one every
   ``CHECKPOINT`` tokens and are rebuilt block by block (``resispec.verifiers.pooled_wor.scan``). The
   integral is the trapezoid rule in ``ln T = s - exp(-s)`` on the race grid of q and k (``race_grid``: from
   ``T_lo``, ``T_lo^k / k! <= TAIL``, to ``T_hi``, where a Gamma(k, m_k) tail is ``TAIL``, ``m_k`` the
   q-mass outside the k - 1 heaviest tokens), shared with the ``P_k`` of step 1; ``e_x`` and ``r_x`` are
   computed once per token, rows in ratio order so that each block is contiguous in memory.
4. **Choice.** The plan tries every minimising prefix (within ``CUT_TOLERANCE``; at most
   ``TRIED_CUTS``, spread evenly) and both scan directions in each block, and keeps, per cut, the
   better direction of each block (the acceptance ``sum min(p, t)`` is a sum over the two blocks),
   then the best cut; an option replaces an earlier one only when better by more than
   ``CHOICE_TOLERANCE`` (ties up to rounding keep ascending, the first cut). Options that could not
   replace the current one are not computed: the descending scan when the ascending one is within
   ``CHOICE_TOLERANCE / 2`` of the block's ceiling ``min(p(block), t(block))``, later cuts when the
   acceptance is within it of the least prefix value (an upper bound on every rule's acceptance).
   Every choice is exact; the choice only affects acceptance.
5. **Mixture.** Where the chosen scan's acceptance is below the least prefix value by more than
   ``MIXTURE_TRIGGER`` (1e-6), the selection becomes a mixture of the scan (probability ``w_0``) and "latest in
   order pi_j" rules (``w_j``), by column generation (``resispec.verifiers.pooled_wor.mixture``); its law
   ``t = w_0 t_scan + sum_j w_j t_(pi_j)``. The first selection uniform ``r`` picks the rule and, on
   ``r < w_0``, serves the scan as ``r / w_0``.
6. **Degenerate drafts.** When a drafted token's q is below ``SMALLEST_RATE`` the integrals cannot be
   represented; the plan then selects the first drawn candidate (law q).
7. **Verify** the selected y: accept with probability ``min(1, p_y / t_y)``, else emit from
   ``norm((p - t)+)``; exact because ``t`` is the selection's law.

Rows. The plan is NumPy only (its scans are sequential and compiled): ``pooled_wor_plans`` builds it once
per distinct row of a (B, V) batch, NumPy or torch, and stacks what the selection and the verification
read into a ``PooledWorRows`` on the rows' device; ``select`` and ``selection_probabilities`` then work on
rows with the array API (``resispec.rows``), for the single-instance API at B = 1 and for the engine alike.

Cost: O(V log V) for the ratio order, O(V N) exponentials, ``P_k`` of every prefix (O(V k N)) and,
per tried cut, four compiled scans of O(V k N) each (three token products and one contraction per
token); N is 30-40 nodes on LLM rows. A mixture adds, per generated order, a sort, one ``P_k`` pass
(O(V k N)) and an LP solve. The scans are sequential in the token order (each ``theta``
depends on the earlier ones through the earlier pair).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from array_api_compat import is_numpy_array

from resispec.bounds_wor import wor_prefix_values
from resispec.residual import supported_residual
from resispec.rows import Array, add_at_, device_of, gather_rows, namespace, set_at_
from resispec.sampling import RowInverseCDF
from resispec.verifiers.pooled.plan import acceptance_ratio
from resispec.verifiers.pooled_wor.mixture import Mixture, mixture, scan_only

if TYPE_CHECKING:
    from resispec.race import Race

SMALLEST_RATE = 1e-200
"""Below this draft mass the race's time scale (about ``1 / q``) leaves float64's range: a draft with a
drafted token this light, or whose mass outside its k - 1 heaviest tokens is this small, gets the
*first-drawn* plan instead (select the first candidate, law ``t = q``; exact, single-draft
acceptance). Float32 model outputs never get there (their smallest positive value is about 1e-45)."""

CUT_TOLERANCE = 1e-12
"""Prefixes whose bound ``p(H) + 1 - P_k(H)`` is within this of the minimum count as minimisers."""

TRIED_CUTS = 8
"""At most this many minimising prefixes are tried (each costs four scans); beyond it, evenly spread."""

CHOICE_TOLERANCE = 1e-12
"""A later option (descending scan, last minimising cut) replaces an earlier one only if its
acceptance is larger by more than this: options tied up to rounding keep the first, so the choice
does not depend on the order of floating-point sums."""


@dataclass(frozen=True)
class PooledWorPlan:
    """Everything pooled_wor needs for every WOR candidate tuple of one ``(p, q, k)``.

    - ``k``; ``order`` (V,): token ids by ratio rank; ``rank`` (V,): rank of each token id.
    - ``cut``: the inside block is ``order[:cut]``; ``inside`` (V,) bool by token id.
    - ``scan_position`` (V,) int64 by token id: the visiting position within the token's block.
    - ``first_drawn``: the degenerate-draft plan (select the first candidate; ``theta = 1``, ``t = q``).
    - ``all_inside``: ``P_k(H)``, the probability that every candidate lies in the inside block.
    - ``bound``: ``min over ratio prefixes of p(H) + 1 - P_k(H)`` (an upper bound on alpha*-WOR).
    - ``theta`` (V,) by token id: the thinning probabilities of the scans.
    - ``reach`` (V,), ``fallback`` (V,) by token id: ``D`` and ``L`` of the module docstring.
    - ``scan_law`` (V,) by token id: the scan's law ``L + theta (D - L)``.
    - ``scan_weight``, ``column_weights`` (m,), ``column_ranks`` (m, V) int32: the mixture
      (``resispec.verifiers.pooled_wor.mixture``): the scan with probability ``scan_weight``, else "latest
      in order j" (``column_ranks[j]`` the position of each token id in it) with ``column_weights[j]``;
      the scan alone (weight 1, m = 0) unless it falls short of the least prefix value by more than 1e-6.
    - ``selection_law`` (V,) by token id: the mixture's law ``t`` (the scan's where m = 0).
    - ``accept`` (V,): ``min(1, p/t)`` (1 where ``p >= t``); ``residual`` (V,): ``(p - t)+`` (falling back
      to p where rounding left it no mass, ``resispec.residual.supported_residual``; ``accept`` is 0
      where p = 0).
    """

    k: int
    order: np.ndarray
    rank: np.ndarray
    cut: int
    inside: np.ndarray
    scan_position: np.ndarray
    first_drawn: bool
    all_inside: float
    bound: float
    theta: np.ndarray
    reach: np.ndarray
    fallback: np.ndarray
    scan_law: np.ndarray
    scan_weight: float
    column_weights: np.ndarray
    column_ranks: np.ndarray
    selection_law: np.ndarray
    accept: np.ndarray
    residual: np.ndarray


def _scan(race: Race, p_rows: np.ndarray, rows: np.ndarray, other: np.ndarray) -> dict[str, np.ndarray]:
    """Thinning along ``rows`` (race rows in visiting order): theta, D, L and t of the scanned tokens
    (by position in ``rows``; tokens with q = 0 get theta 1 and D = L = 0), by the compiled scan
    (``resispec.verifiers.pooled_wor.scan``) from the earlier pair ``other``."""
    from resispec.verifiers.pooled_wor.scan import thinned_scan  # numba is imported on first use
    out = {"theta": np.ones(rows.size), "reach": np.zeros(rows.size), "fallback": np.zeros(rows.size)}
    positions = np.flatnonzero(race.rate[rows] > 0)
    theta, reach, fallback = thinned_scan(race.stay, race.ring, race.rate, p_rows, rows[positions], other,
                                          race.grid.weight)
    out["theta"][positions], out["reach"][positions], out["fallback"][positions] = theta, reach, fallback
    out["law"] = out["fallback"] + out["theta"] * (out["reach"] - out["fallback"])
    return out


def _best_scan(race: Race, p_rows: np.ndarray, block: np.ndarray, other: np.ndarray
               ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The better of the two scan directions of ``block`` (race rows, ratio ascending; then descending)
    by the block's acceptance ``sum min(p, t)``; descending replaces ascending only if better by more
    than ``CHOICE_TOLERANCE``. Returns the scan (rows) and its arrays.

    Either direction's acceptance is at most ``min(p(block), t(block))``, and ``t(block)`` does not
    depend on the direction (``P_k(H)`` inside, ``1 - P_k(H)`` outside; the two computed totals agree
    to rounding, far below ``CHOICE_TOLERANCE / 2``). So when ascending is within ``CHOICE_TOLERANCE / 2``
    of that ceiling, descending cannot replace it and is not scanned: the same choice, one scan less."""
    ascending = _scan(race, p_rows, block, other)
    score = float(np.minimum(p_rows[block], ascending["law"]).sum())
    ceiling = min(float(p_rows[block].sum()), float(ascending["law"].sum()))
    if score >= ceiling - CHOICE_TOLERANCE / 2:
        return block, ascending
    descending = _scan(race, p_rows, block[::-1], other)
    if float(np.minimum(p_rows[block[::-1]], descending["law"]).sum()) > score + CHOICE_TOLERANCE:
        return block[::-1], descending
    return block, ascending


def _tried_cuts(minimisers: np.ndarray) -> list[int]:
    """The minimising prefixes the plan tries: all of them, or ``TRIED_CUTS`` spread evenly from the
    first to the last when there are more."""
    if minimisers.size > TRIED_CUTS:
        minimisers = minimisers[np.unique(np.linspace(0, minimisers.size - 1, TRIED_CUTS).round().astype(np.int64))]
    return [int(cut) for cut in minimisers]


def pooled_wor_plan(p: np.ndarray, q: np.ndarray, k: int) -> PooledWorPlan:
    """The plan of the module docstring for validated ``(p, q)`` and k."""
    from resispec.race import heavy_free_mass  # numba is imported on first use, not with resispec
    if q[q > 0].min() < SMALLEST_RATE or heavy_free_mass(q, k) < SMALLEST_RATE:
        return _first_drawn_plan(p, q, k)
    values = wor_prefix_values(p, q, k)
    race, order = values.race, values.profile.order
    p_rows = p[order]
    lowest = float(values.value.min())
    minimisers = np.flatnonzero(values.value <= lowest + CUT_TOLERANCE)
    best = None
    for cut in _tried_cuts(minimisers):
        outside_bad = np.zeros((2, k, race.grid.t.size))
        outside_bad[0, 0] = np.exp(-float(race.rate[cut:].sum()) * race.grid.t)
        inside_scan, inside = _best_scan(race, p_rows, np.arange(cut), outside_bad)
        inside_pair = race.prefix_pair(cut, values.prefix_pairs)
        outside_scan, outside = _best_scan(race, p_rows, np.arange(cut, p.size), inside_pair)
        scan = np.concatenate([inside_scan, outside_scan])
        arrays = {name: np.concatenate([inside[name], outside[name]]) for name in inside}
        score = float(np.minimum(p_rows[scan], arrays["law"]).sum())
        if best is None or score > best[0] + CHOICE_TOLERANCE:
            best = (score, cut, order[scan], arrays)
        if best[0] >= min(lowest, 1.0) - CHOICE_TOLERANCE / 2:
            break  # no rule accepts more than the least prefix value: a later cut cannot replace this one
    _, cut, scan, arrays = best
    by_id = {name: np.empty(p.size) for name in arrays}
    for name, values_in_scan in arrays.items():
        by_id[name][scan] = values_in_scan
    position = np.empty(p.size, dtype=np.int64)
    position[scan] = np.concatenate([np.arange(cut), np.arange(p.size - cut)])
    inside_mask = np.zeros(p.size, dtype=bool)
    inside_mask[order[:cut]] = True
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return _finish(p, k, order, rank, cut, inside_mask, position, False, min(lowest, 1.0), by_id,
                   mixture(p, race, rank, by_id["law"], lowest))


def _first_drawn_plan(p: np.ndarray, q: np.ndarray, k: int) -> PooledWorPlan:
    """Select the first candidate: its law is q (``D = L = q``, ``theta = 1``)."""
    ids = np.arange(p.size)
    arrays = {"theta": np.ones(p.size), "reach": q.copy(), "fallback": q.copy(), "law": q.copy()}
    return _finish(p, k, ids, ids, 0, np.zeros(p.size, dtype=bool), ids, True, 1.0, arrays, scan_only(arrays["law"]))


def _finish(p: np.ndarray, k: int, order: np.ndarray, rank: np.ndarray, cut: int, inside: np.ndarray,
            position: np.ndarray, first_drawn: bool, bound: float, by_id: dict[str, np.ndarray],
            mixed: Mixture) -> PooledWorPlan:
    """Acceptance, residual and the plan record from the selection law of the mixture ``mixed`` (the
    scan's law ``by_id["law"]`` alone, or mixed with "latest in order" rules)."""
    law = mixed.law
    accept = acceptance_ratio(p, law)
    residual = supported_residual(np.maximum(p - law, 0.0), p)
    return PooledWorPlan(k=k, order=order, rank=rank, cut=cut, inside=inside, scan_position=position,
                         first_drawn=first_drawn, all_inside=float(by_id["law"][inside].sum()), bound=bound,
                         theta=by_id["theta"], reach=by_id["reach"], fallback=by_id["fallback"],
                         scan_law=by_id["law"], scan_weight=mixed.scan_weight, column_weights=mixed.weights,
                         column_ranks=mixed.ranks, selection_law=law, accept=accept, residual=residual)


@dataclass(frozen=True)
class PooledWorRows:
    """The plans of B rows, as the selection and the verification read them (arrays of the rows' kind,
    on their device): ``theta``, ``selection_law``, ``accept``, ``residual`` (B, V) by token id,
    ``scan_position`` (B, V) integer, ``inside`` (B, V) bool; ``first_drawn`` (B,) bool; the mixtures:
    ``scan_weight`` (B,), ``column_weights`` (B, M) and ``column_ranks`` (B, M, V) int32, M the most
    columns of any row, padded with weight 0 (M = 0 when every row scans alone); ``residual_sampler``
    the ``RowInverseCDF`` of ``residual``; ``plans``, the NumPy plan of each row (rows with the same pair
    share one)."""

    theta: Array
    selection_law: Array
    accept: Array
    residual: Array
    scan_position: Array
    inside: Array
    first_drawn: Array
    scan_weight: Array
    column_weights: Array
    column_ranks: Array
    residual_sampler: RowInverseCDF
    plans: list[PooledWorPlan]


def pooled_wor_plans(p: Array, q: Array, k: int) -> PooledWorRows:
    """The NumPy plan of every distinct row of validated float64 ``p``, ``q`` (B, V), stacked and spread
    back over the rows, on their device."""
    xp = namespace(p, q)
    host_p, host_q = (x if is_numpy_array(x) else x.cpu().numpy() for x in (p, q))
    if host_p.shape[0] == 1:
        distinct, row_of = [(host_p[0], host_q[0])], np.zeros(1, dtype=np.int64)
    else:
        pairs, row_of = np.unique(np.concatenate([host_p, host_q], axis=1), axis=0, return_inverse=True)
        distinct = [(pair[:p.shape[1]], pair[p.shape[1]:]) for pair in pairs]
    plans = [pooled_wor_plan(pair_p, pair_q, k) for pair_p, pair_q in distinct]
    spread = xp.asarray(row_of.reshape(-1), device=device_of(p))

    def stack(values: list) -> Array:
        stacked = xp.asarray(np.stack(values), device=device_of(p))
        return stacked if p.shape[0] == len(plans) == 1 else stacked[spread]

    fields = {name: stack([getattr(plan, name) for plan in plans])
              for name in ("theta", "selection_law", "accept", "residual", "scan_position", "inside", "first_drawn",
                           "scan_weight")}
    columns = max(plan.column_weights.size for plan in plans)
    fields["column_weights"] = stack([np.pad(plan.column_weights, (0, columns - plan.column_weights.size))
                                      for plan in plans])
    fields["column_ranks"] = stack([np.pad(plan.column_ranks, ((0, columns - plan.column_weights.size), (0, 0)))
                                    for plan in plans])
    return PooledWorRows(**fields, residual_sampler=RowInverseCDF(fields["residual"]),
                         plans=[plans[row] for row in row_of.reshape(-1)])


def _scan_keys(plan: PooledWorRows, candidates: Array) -> tuple[Array, Array]:
    """``(key, active)`` (B, k) each: the candidates' visiting keys (scan position; draw order for the
    first-drawn plan) and whether the active block visits them (the inside block iff every candidate is
    inside; every candidate for the first-drawn plan)."""
    xp = namespace(candidates)
    inside = gather_rows(plan.inside, candidates)
    first_drawn = plan.first_drawn[:, None]
    active = xp.all(inside, axis=1, keepdims=True) | ~inside | first_drawn
    draw_order = xp.arange(candidates.shape[1], device=device_of(candidates))
    return xp.where(first_drawn, draw_order, gather_rows(plan.scan_position, candidates)), active


def _scan_probabilities(plan: PooledWorRows, candidates: Array) -> Array:
    """The scan's ``s`` (B, k): along the visit, the j-th visited is selected with probability
    ``left theta`` (``left`` = 1 minus what the earlier ones took), the last visited with ``left``."""
    xp = namespace(candidates)
    key, active = _scan_keys(plan, candidates)
    visit = xp.argsort(xp.where(active, key, xp.iinfo(key.dtype).max), axis=1, stable=True)  # active ones first
    count = xp.sum(xp.astype(active, xp.int64), axis=1)
    theta = gather_rows(plan.theta, gather_rows(candidates, visit))
    chosen = xp.zeros_like(theta)
    left = xp.ones_like(theta[:, 0])
    for position in range(candidates.shape[1]):
        here = xp.where(position < count - 1, left * theta[:, position], xp.where(position == count - 1, left, 0.0))
        chosen[:, position] = here
        left = left - here
    return set_at_(xp.zeros_like(chosen), visit, chosen)


def _scan_select(plan: PooledWorRows, candidates: Array, u: Array) -> Array:
    """The scan's selected index (B,): the first visited with ``u[index] < theta`` (the active candidate
    of least key among those), else the last visited (the active candidate of greatest key)."""
    xp = namespace(candidates)
    key, active = _scan_keys(plan, candidates)
    takes = active & (u < gather_rows(plan.theta, candidates))
    least = xp.where(takes, key, xp.iinfo(key.dtype).max)
    return xp.where(xp.any(takes, axis=1), xp.argmin(least, axis=1), xp.argmax(xp.where(active, key, -1), axis=1))


def _latest(plan: PooledWorRows, column: Array, candidates: Array) -> Array:
    """Index (B,) of the candidate latest in each row's order ``column`` (B,) (its column of the mixture)."""
    xp = namespace(candidates)
    batch, columns, size = plan.column_ranks.shape
    rows = xp.arange(batch, device=device_of(candidates)) * columns + column
    ranks = xp.take(xp.reshape(plan.column_ranks, (batch * columns, size)), rows, axis=0)
    return xp.argmax(gather_rows(ranks, candidates), axis=1)


def selection_probabilities(plan: PooledWorRows, candidates: Array) -> Array:
    """``s`` (B, k): the probability that each candidate is selected, given the candidates:
    ``scan_weight s_scan + sum_j column_weights[j] 1[candidate latest in order j]``."""
    xp = namespace(candidates)
    chosen = plan.scan_weight[:, None] * _scan_probabilities(plan, candidates)
    rows = xp.arange(candidates.shape[0], device=device_of(candidates))
    for column in range(plan.column_weights.shape[1]):
        latest = _latest(plan, xp.full_like(rows, column), candidates)
        add_at_(chosen, latest[:, None], plan.column_weights[:, column:column + 1])
    return chosen


def select(plan: PooledWorRows, candidates: Array, u: Array) -> Array:
    """Index (B,) of the selected candidate. The first uniform ``r = u[0]`` also picks the rule: the
    scan when ``r < scan_weight``, run on ``u`` with ``u[0]`` replaced by ``r / scan_weight`` (uniform
    given ``r < scan_weight``, independent of the rest), else the column j with ``r`` in
    ``[scan_weight + W_(j-1), scan_weight + W_j)`` (``W`` the cumulative column weights; the last column
    of the row when rounding leaves ``r`` past them all). Where the scan is alone (weight 1) the scan
    reads ``u`` unchanged."""
    xp = namespace(candidates)
    first, weight = u[:, 0], plan.scan_weight
    scanned = first < weight
    rescaled = xp.concat([(first / xp.where(weight > 0, weight, 1.0))[:, None], u[:, 1:]], axis=1)
    index = _scan_select(plan, candidates, rescaled)
    if plan.column_weights.shape[1] == 0:
        return index
    edges = weight[:, None] + xp.cumulative_sum(plan.column_weights, axis=1)
    last = xp.sum(xp.astype(plan.column_weights > 0, xp.int64), axis=1) - 1
    column = xp.maximum(xp.minimum(xp.sum(xp.astype(edges <= first[:, None], xp.int64), axis=1), last), 0)
    return xp.where(scanned, index, _latest(plan, column, candidates))
