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
   positive coefficients only (nothing cancels). One forward pass along each scan carries the
   earlier-scanned pair (the thetas are known there), a backward pass stores the later-scanned pairs.
   The integral is the trapezoid rule in ``u = ln T`` (geometric convergence, as for ``P_k``) between
   ``T_lo``, where ``T^k / k! <= TAIL``, and ``T_hi = ln(1/TAIL) / m_k``, ``m_k`` the q-mass outside the
   k - 1 heaviest tokens (before the k-th arrival the arrival rate is at least ``m_k``).
4. **Choice.** The plan tries the first and the last minimising prefix (within ``CUT_TOLERANCE``) and
   both scan directions in each block, and keeps, per cut, the better direction of each block (the
   acceptance ``sum min(p, t)`` is a sum over the two blocks), then the better cut. Every choice is
   exact; the choice only affects acceptance.
5. **Degenerate drafts.** When a drafted token's q is below ``SMALLEST_RATE`` the integrals cannot be
   represented; the plan then selects the first drawn candidate (law q).
6. **Verify** the selected y: accept with probability ``min(1, p_y / t_y)``, else emit from
   ``norm((p - t)+)``; exact because ``t`` is the selection's law.

Cost: O(V log V) for the ratio order, ``P_k`` of every prefix (O(V k N)), and a sequential scan over
the tokens with O(k^2 N) work each (N ~ 80 nodes), for up to two cuts and two directions per block.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from resispec.bounds_wor import wor_prefix_values
from resispec.pooling import acceptance_ratio
from resispec.residual import supported_residual
from resispec.sampling import InverseCDF

STEP = 0.2
"""Trapezoid step in ``u = ln T`` (error about ``exp(-pi^2 / STEP)``, far below rounding)."""

TAIL = 1e-18
"""Each truncated tail of a race integral is at most this."""

SMALLEST_RATE = 1e-200
"""Below this draft mass the race's time scale (about ``1 / q``) leaves float64's range: a draft with a
drafted token this light, or whose mass outside its k - 1 heaviest tokens is this small, gets the
*first-drawn* plan instead (select the first candidate, law ``t = q``; exact, single-draft
acceptance). Float32 model outputs never get there (their smallest positive value is about 1e-45)."""

CUT_TOLERANCE = 1e-12
"""Prefixes whose bound ``p(H) + 1 - P_k(H)`` is within this of the minimum count as minimisers."""


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
    - ``selection_law`` (V,) by token id: ``t = L + theta (D - L)``.
    - ``accept`` (V,): ``min(1, p/t)`` (1 where ``p >= t``); ``residual`` (V,): ``(p - t)+`` and its
      ``residual_sampler`` (the residual falls back to p where rounding left it no mass,
      ``resispec.residual.supported_residual``; ``accept`` is 0 where p = 0).
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
    selection_law: np.ndarray
    accept: np.ndarray
    residual: np.ndarray
    residual_sampler: InverseCDF

    def visit(self, candidates: np.ndarray) -> np.ndarray:
        """Indices of the candidates the active block visits, in scan order."""
        if self.first_drawn:
            return np.arange(candidates.size)
        inside = self.inside[candidates]
        active = np.arange(candidates.size) if inside.all() else np.flatnonzero(~inside)
        return active[np.argsort(self.scan_position[candidates[active]], kind="stable")]


def _nodes(q: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """Quadrature nodes T (ascending) and the step in ``u = ln T`` (module docstring, step 3)."""
    heaviest = np.sort(q)[::-1]
    rest = float(heaviest[k - 1:].sum())
    t_lo = (TAIL * math.factorial(k)) ** (1.0 / k)
    t_hi = math.log(1.0 / TAIL) / max(rest, 1e-300)
    count = max(3, math.ceil((math.log(t_hi) - math.log(t_lo)) / STEP) + 1)
    u = np.linspace(math.log(t_lo), math.log(t_hi), count)
    return np.exp(u), float(u[1] - u[0])


def _token_step(pair: tuple[np.ndarray, np.ndarray], stay: np.ndarray, ring: np.ndarray, flux: np.ndarray,
                weight: float) -> tuple[np.ndarray, np.ndarray]:
    """Multiply ``pair`` by one token's pair ``(e + w r X, q e w)`` (coefficients of shape (k, N))."""
    a, b = pair
    new_a = a * stay
    new_b = b * stay
    new_b += (weight * flux) * a
    if weight != 0.0:
        scaled = weight * ring
        new_a[1:] += scaled * a[:-1]
        new_b[1:] += scaled * b[:-1]
    return new_a, new_b


def _unit(k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The pair of the empty token set: ``(1, 0)``."""
    a = np.zeros((k, n))
    a[0] = 1.0
    return a, np.zeros((k, n))


def _block_pair(q: np.ndarray, tokens: np.ndarray, weight: float, t: np.ndarray, k: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """The pair of a token set of one fixed weight (weight 0: ``(exp(-q(set) T), 0)``)."""
    if weight == 0.0:
        a = np.zeros((k, t.size))
        a[0] = np.exp(-float(q[tokens].sum()) * t)
        return a, np.zeros((k, t.size))
    pair = _unit(k, t.size)
    for x in tokens[q[tokens] > 0]:
        stay = np.exp(-q[x] * t)
        pair = _token_step(pair, stay, -np.expm1(-q[x] * t), q[x] * stay, weight)
    return pair


def _suffix_pairs(q: np.ndarray, drafted: np.ndarray, t: np.ndarray, k: int) -> np.ndarray:
    """``out[i]`` (shape (2, k, N)): the pair of ``drafted[i + 1:]`` at weight 1, reversed in X
    (``out[i, :, j]`` holds the coefficient of ``X^(k - 1 - j)``), for the [X^(k-1)] contractions."""
    out = np.empty((drafted.size, 2, k, t.size))
    pair = _unit(k, t.size)
    for i in range(drafted.size - 1, -1, -1):
        out[i, 0], out[i, 1] = pair[0][::-1], pair[1][::-1]
        x = drafted[i]
        stay = np.exp(-q[x] * t)
        pair = _token_step(pair, stay, -np.expm1(-q[x] * t), q[x] * stay, 1.0)
    return out


def _scan(q: np.ndarray, p: np.ndarray, scan: np.ndarray, other: tuple[np.ndarray, np.ndarray], t: np.ndarray,
          step: float, k: int) -> dict[str, np.ndarray]:
    """Thinning along ``scan`` (token ids in visiting order): theta, D, L and t of the scanned tokens
    (by position in ``scan``; tokens with q = 0 get theta 1 and D = L = 0).

    With the earlier-scanned pair ``(A, B)`` (``other`` times the earlier tokens at weight
    ``1 - theta``) and y forced into S, ``(A, B)(r_y X, q_y e_y) = (r_y X A, q_y e_y A + r_y X B)``;
    D contracts it with the later tokens' pair at weight 1, L with ``(exp(-q(later) T), 0)``."""
    out = {"theta": np.ones(scan.size), "reach": np.zeros(scan.size), "fallback": np.zeros(scan.size)}
    weights = t * step  # dT = T du
    positions = np.flatnonzero(q[scan] > 0)
    drafted = scan[positions]
    later = _suffix_pairs(q, drafted, t, k)
    later_decay = np.exp(-np.outer(np.concatenate([np.cumsum(q[drafted][::-1])[::-1][1:], [0.0]]), t))
    earlier_a, earlier_b = other
    with_a, with_b = np.zeros((k, t.size)), np.zeros((k, t.size))
    for i, (position, y) in enumerate(zip(positions, drafted)):
        stay = np.exp(-q[y] * t)
        ring = -np.expm1(-q[y] * t)
        flux = q[y] * stay
        with_a[0] = 0.0
        np.multiply(earlier_a[:-1], ring, out=with_a[1:])
        np.multiply(earlier_a, flux, out=with_b)
        with_b[1:] += ring * earlier_b[:-1]
        reach = float(np.einsum("jn,jn,n->", with_a, later[i, 1], weights)
                      + np.einsum("jn,jn,n->", with_b, later[i, 0], weights))
        fallback = min(float(weights @ (with_b[k - 1] * later_decay[i])), reach)
        spread = reach - fallback
        theta = 1.0 if spread <= 0 else min(1.0, max(0.0, (p[y] - fallback) / spread))
        out["theta"][position], out["reach"][position], out["fallback"][position] = theta, reach, fallback
        earlier_a, earlier_b = _token_step((earlier_a, earlier_b), stay, ring, flux, 1.0 - theta)
    out["law"] = out["fallback"] + out["theta"] * (out["reach"] - out["fallback"])
    return out


def _best_scan(q: np.ndarray, p: np.ndarray, block: np.ndarray, other: tuple[np.ndarray, np.ndarray],
               t: np.ndarray, step: float, k: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The better of the two scan directions of ``block`` (ratio ascending, descending) by the block's
    acceptance ``sum min(p, t)``; ties keep ascending. Returns the scan and its arrays."""
    best = None
    for scan in (block, block[::-1]):
        result = _scan(q, p, scan, other, t, step, k)
        score = float(np.minimum(p[scan], result["law"]).sum())
        if best is None or score > best[0]:
            best = (score, scan, result)
    return best[1], best[2]


def pooled_wor_plan(p: np.ndarray, q: np.ndarray, k: int) -> PooledWorPlan:
    """The plan of the module docstring for validated ``(p, q)`` and k."""
    drafted = q[q > 0]
    if drafted.min() < SMALLEST_RATE or np.sort(drafted)[::-1][k - 1:].sum() < SMALLEST_RATE:
        return _first_drawn_plan(p, q, k)
    profile, bounds, _ = wor_prefix_values(p, q, k)
    order = profile.order
    lowest = float(bounds.min())
    minimisers = np.flatnonzero(bounds <= lowest + CUT_TOLERANCE)
    t, step = _nodes(q, k)
    best = None
    for cut in sorted({int(minimisers[0]), int(minimisers[-1])}):
        inside_scan, inside = _best_scan(q, p, order[:cut], _block_pair(q, order[cut:], 0.0, t, k), t, step, k)
        outside_scan, outside = _best_scan(q, p, order[cut:], _block_pair(q, order[:cut], 1.0, t, k), t, step, k)
        scan = np.concatenate([inside_scan, outside_scan])
        arrays = {name: np.concatenate([inside[name], outside[name]]) for name in inside}
        score = float(np.minimum(p[scan], arrays["law"]).sum())
        if best is None or score > best[0]:
            best = (score, cut, scan, arrays)
    _, cut, scan, arrays = best
    by_id = {name: np.empty(p.size) for name in arrays}
    for name, values in arrays.items():
        by_id[name][scan] = values
    position = np.empty(p.size, dtype=np.int64)
    position[scan] = np.concatenate([np.arange(cut), np.arange(p.size - cut)])
    inside_mask = np.zeros(p.size, dtype=bool)
    inside_mask[order[:cut]] = True
    return _finish(p, k, order, cut, inside_mask, position, False, min(lowest, 1.0), by_id)


def _first_drawn_plan(p: np.ndarray, q: np.ndarray, k: int) -> PooledWorPlan:
    """Select the first candidate: its law is q (``D = L = q``, ``theta = 1``)."""
    profile_order = np.arange(p.size)
    arrays = {"theta": np.ones(p.size), "reach": q.copy(), "fallback": q.copy(), "law": q.copy()}
    return _finish(p, k, profile_order, 0, np.zeros(p.size, dtype=bool), np.arange(p.size), True,
                   1.0, arrays)


def _finish(p: np.ndarray, k: int, order: np.ndarray, cut: int, inside: np.ndarray, position: np.ndarray,
            first_drawn: bool, bound: float, by_id: dict[str, np.ndarray]) -> PooledWorPlan:
    """Acceptance, residual and the plan record from the selection law ``by_id["law"]``."""
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    law = by_id["law"]
    accept = acceptance_ratio(p, law)
    residual = supported_residual(np.maximum(p - law, 0.0), p)
    sampler = InverseCDF(residual)
    return PooledWorPlan(k=k, order=order, rank=rank, cut=cut, inside=inside, scan_position=position,
                         first_drawn=first_drawn, all_inside=float(law[inside].sum()), bound=bound,
                         theta=by_id["theta"], reach=by_id["reach"], fallback=by_id["fallback"],
                         selection_law=law, accept=accept, residual=residual, residual_sampler=sampler)


def selection_probabilities(plan: PooledWorPlan, candidates: np.ndarray) -> np.ndarray:
    """Probability that each candidate (by index) is selected, given the candidates."""
    chosen = np.zeros(candidates.size)
    left = 1.0
    visit = plan.visit(candidates)
    for index in visit[:-1]:
        chosen[index] = left * plan.theta[candidates[index]]
        left -= chosen[index]
    chosen[visit[-1]] = left
    return chosen


def select(plan: PooledWorPlan, candidates: np.ndarray, u: np.ndarray) -> int:
    """Index of the selected candidate: the first visited with ``u[index] < theta``, else the last."""
    visit = plan.visit(candidates)
    for index in visit[:-1]:
        if u[index] < plan.theta[candidates[index]]:
            return int(index)
    return int(visit[-1])
