"""resispec_wor's plan, for B rows at once (NumPy or torch): the k = 2 "latest first" plan for candidates
drawn without replacement.

Target ``r``, draft ``q`` (normalised over the undrawn tokens), two WOR candidates: ``x_1 ~ q``, then
``x_2 = y`` with probability ``q_y / (1 - q_{x_1})``. Step 1 accepts x with probability ``A_x / q_x``
(accepted mass ``0 <= A_x <= min(r_x, q_x)``), leaving the rejection mass ``s_x = q_x - A_x``. Step 2 is
reached with candidate y with probability

    C(y) = sum_{x != y} s_x q_y / (1 - q_x) = q_y (S - t_y),   t_x = s_x / (1 - q_x),   S = sum_x t_x,

and accepts it with probability ``a_2(y) = min(1, (r_y - A_y) / C(y))``, whatever x was; all rejected:
emit from ``f = norm((r - A - C)+)``. This is exact for EVERY admissible A: the mass emitted at y is
``A_y + min(r_y - A_y, C(y)) + (r_y - A_y - C(y))+ = r_y``, and the all-rejected probability
``1 - sum A - sum min(r - A, C)`` equals ``sum (r - A - C)+`` (since ``sum r = 1``). So a numerical
solve can only cost acceptance, never exactness, as long as C is derived from the A actually used.

Latest first: step 1 accepts only the mass step 2 cannot absorb, ``A_x = clip(r_x - C(x), 0, q_x)``.
With ``C(x) = q_x (S - t_x)`` and ``t_x (1 - q_x) = q_x - A_x`` this is the scalar fixed point

    t_x = clip(q_x (1 + S) - r_x, 0, q_x / (1 - q_x)),   S = F(S) = sum_x t_x

(interior case: ``t_x (1 - q_x) = q_x - r_x + q_x S - q_x t_x``; the clips are A = q and A = 0).
Writing ``t_x = q_x clip(S - lo_x, 0, w_x)`` with ``lo_x = r_x / q_x - 1`` and ``w_x = 1 / (1 - q_x)``,
F is non-decreasing and piecewise linear with breakpoints ``lo_x`` and ``hi_x = lo_x + w_x``; its slope
is the q-mass of the tokens on their rising piece, at most 1. So ``G(S) = S - F(S)`` is non-decreasing,
``G(0) = -F(0) <= 0`` and ``G(S) -> +inf``: a root exists. It is unique unless every drafted token
rises on a whole interval of roots (then ``r = 1`` on the draft's support and every root accepts
everything); the smallest root is used (S = 0 when p == q: accept every candidate at once). S = 0 is
also taken where ``G(0) = -F(0)`` is negative by rounding only, ``F(0) <= ROOT_SLACK * V`` (``F(0) =
sum_x clip(q_x - r_x, 0, c_x)``, a sum of V terms of size <= 1): without this, the q renormalised by its own
sum, off p == q by one ulp, moved the root to the far end of that interval (S ~ 1, step 1 accepting
``A_x / q_x = p_x`` instead of 1), and NumPy and torch, whose sums round differently, chose different
ends. Exact either way (every admissible A is); the acceptance S = 0 can cost is at most F(0). The solve
(``solve_fixed_point``) writes F as a difference of two ratio-profile hinges, binary-searches their
sorted breakpoints (all rows in lockstep) and finishes with the exact root of the final linear piece:
O(V log V) per row, never O(V^2). The plan's acceptance ``sum A + sum min(r - A, C)`` is the best of any
sequential verifier of two WOR candidates (see docs/resispec_wor.md; checked against
``bounds_wor.sequential_optimum_wor_lp``).

Numerics: ``1 - q_x`` and ``S - t_x`` are sums over the other tokens (``_others``): a difference
``total - v_x`` cancels catastrophically only for an entry above half the total, which is summed
directly. C adds the heaviest token's term as ``s_d (q_y / (1 - q_d))`` (``_step_two_reach``), so it
cannot overflow. If ``q / (1 - q)`` itself overflows (``1 - q_x`` below ~1e-308), S is not
representable and that row falls back to ``A = min(r, q)`` (exact, not optimal). Tokens with
``q_x = 0`` (drawn, or outside the draft) take no part: ``A = C = 0`` there and their target mass goes
to the final residual. On the CPU the plans are built a few rows at a time (``cpu_chunk_rows``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
from array_api_compat import device as device_of

from resispec.residual import supported_residual
from resispec.row_ratio_profile import RowRatioProfile
from resispec.rows import (
    Array,
    cpu_chunk_rows,
    float_errors_allowed,
    namespace,
    row_values,
    set_pairs_,
    value_at,
    zero_at_,
)

ROOT_SLACK = 4 * float(np.finfo(np.float64).eps)
"""Per vocabulary entry: ``G(0)`` within ``-ROOT_SLACK * V`` of 0 counts as 0 (module docstring)."""


def _others(values: Array) -> Array:
    """``sum_{y != x} values_y`` for every x (B, V), non-negative rows, without cancellation: ``total - v_x``,
    except at a row's largest entry above half its total, where the other entries are summed directly."""
    xp = namespace(values)
    total = xp.sum(values, axis=-1, keepdims=True)
    others = total - values
    largest = xp.argmax(values, axis=-1)
    rows = xp.nonzero(value_at(values, largest) > 0.5 * total[:, 0])[0]  # the heavy rows
    if rows.shape[0] == 0:
        return others
    part, part_largest = xp.take(values, rows, axis=0), xp.take(largest, rows, axis=0)
    keep = _token_ids(values) != part_largest[:, None]
    return set_pairs_(others, rows, part_largest, xp.sum(xp.reshape(part[keep], (rows.shape[0], -1)), axis=-1))


def _token_ids(x: Array) -> Array:
    """``[0, 1, ..., V - 1]`` (1, V) on the device of ``x`` (B, V)."""
    if type(x) is np.ndarray:
        return np.arange(x.shape[-1])[None, :]
    return namespace(x).arange(x.shape[-1], device=device_of(x))[None, :]


def _step_two_reach(draft: Array, rejected: Array, rest: Array) -> Array:
    """``C(y) = sum_{x != y} s_x q_y / (1 - q_x)`` (B, V); ``rest = 1 - q`` summed directly.

    Only the heaviest token d can have ``1 - q_d < 1/2`` (for x != d, ``1 - q_x >= q_d``), so its term
    is added as ``s_d (q_y / (1 - q_d))`` with ``q_y / (1 - q_d) <= 1``: no overflow even when
    ``1 - q_d`` is subnormal, where ``q_y sum_x s_x / (1 - q_x)`` would overflow.
    """
    xp = namespace(draft)
    heaviest = xp.argmax(draft, axis=-1)
    with float_errors_allowed(draft):  # only at the heaviest token
        rate = zero_at_(rejected / rest, heaviest)
        share = zero_at_(draft / value_at(rest, heaviest)[:, None], heaviest)
    reach = draft * _others(rate)
    reach += value_at(rejected, heaviest)[:, None] * share
    return reach


@dataclass(frozen=True)
class LatestFirstPlan:
    """The k = 2 latest-first plans of B rows; every field (B, V) by token id except ``total`` (B,).

    ``target`` r, ``draft`` q (summing to 1), ``accepted`` A (step-1 accepted mass), ``reach`` C (the
    probability of reaching step 2 with each token), ``second`` ``a_2 = min(r - A, C) / C`` (1 where
    C = 0), ``residual`` the unnormalised final residual ``(r - A - C)+``, ``total`` the fixed point S
    (inf where ``1 - q_x`` underflowed and the row fell back to ``A = min(r, q)``).
    """

    target: Array
    draft: Array
    accepted: Array
    reach: Array
    second: Array
    residual: Array
    total: Array

    @property
    def acceptance(self) -> Array:
        """The two-candidate acceptance ``sum A + sum min(r - A, C)`` of every row (B,)."""
        xp = namespace(self.target)
        return xp.sum(self.accepted, axis=-1) + xp.sum(xp.minimum(self.target - self.accepted, self.reach), axis=-1)

    def rows(self, index: Array) -> LatestFirstPlan:
        """The plans of the rows ``index`` (integer (B',)) only."""
        xp = namespace(self.target)
        return LatestFirstPlan(**{field.name: xp.take(getattr(self, field.name), index, axis=0)
                                  for field in fields(self)})

    def first_acceptance(self, candidate: Array) -> Array:
        """Step 1's acceptance ``min(A_x / q_x, 1)`` (B,) of each row's first candidate x (B,).

        1 where rejecting x would leave ``r_x`` without mass (no final residual and no other drafted
        token with ``a_2 > 0``): there ``s_x = 0`` in exact arithmetic and only rounding made ``A_x < q_x``.
        """
        xp = namespace(self.draft)
        acceptance = xp.minimum(value_at(self.accepted, candidate) / value_at(self.draft, candidate), 1.0)
        stranded = (acceptance < 1.0) & ~xp.any(self.residual > 0, axis=-1)  # residual >= 0: "sum > 0" is "any > 0"
        if type(stranded) is np.ndarray and not stranded.any():  # on the host the check is free
            return acceptance
        others = _token_ids(self.draft) != candidate[:, None]
        stranded = stranded & ~xp.any((self.draft > 0) & (self.second > 0) & others, axis=-1)
        return xp.where(stranded, 1.0, acceptance)

    def rejection_target(self, candidate: Array) -> Array:
        """The law each plan emits once its candidate x (B,) is rejected (B, V), normalised:
        ``r_x = q_{-x} a_2 + <q_{-x}, 1 - a_2> norm(f)``, ``q_{-x}`` the draft without x renormalised
        (by summing the undrawn mass).

        The missing mass ``<q_{-x}, 1 - a_2>`` is summed from non-negative terms (no ``1 - dot``
        cancellation). Averaged over the rejections, ``sum_x s_x r_x = r - A``: the recursion's exactness
        identity.
        """
        xp = namespace(self.draft)
        masked = zero_at_(xp.asarray(self.draft, copy=True), candidate)
        proposal = masked / xp.sum(masked, axis=-1, keepdims=True)
        law = proposal * self.second
        mass = xp.sum(self.residual, axis=-1, keepdims=True)
        missed = xp.sum(proposal * (1.0 - self.second), axis=-1, keepdims=True)
        with float_errors_allowed(mass):
            law = xp.where(mass > 0, law + missed * (self.residual / mass), law)
        law = supported_residual(law, self.target)  # r itself where rounding left no mass (masses near 1e-308)
        return law / xp.sum(law, axis=-1, keepdims=True)


def latest_first_plan(target: Array, undrawn: Array) -> LatestFirstPlan:
    """The latest-first plans of targets ``target`` (B, V), rows summing to 1, and undrawn draft weights.

    ``undrawn`` (B, V): non-negative, at least two positive entries per row (q with the drawn tokens
    zeroed, unnormalised); the draft is ``undrawn / sum(undrawn)`` and ``1 - q_x`` is the undrawn mass of
    the other tokens divided by the same sum. Tokens off a row's draft support get ``A = C = 0``.
    """
    rows = cpu_chunk_rows(target)
    if rows >= target.shape[0]:
        return _plan(target, undrawn)
    xp = namespace(target)
    parts = [_plan(target[start:start + rows], undrawn[start:start + rows])
             for start in range(0, target.shape[0], rows)]
    return LatestFirstPlan(**{field.name: xp.concat([getattr(part, field.name) for part in parts])
                              for field in fields(LatestFirstPlan)})


def _plan(target: Array, undrawn: Array) -> LatestFirstPlan:
    """``latest_first_plan`` of all the rows at once."""
    xp = namespace(target, undrawn)
    draft = undrawn / xp.sum(undrawn, axis=-1, keepdims=True)
    rest = _others(draft)  # 1 - q_x, summed directly
    with float_errors_allowed(draft):
        cap = draft / rest  # q / (1 - q); 0 off the support, inf where 1 - q_x underflowed
    solvable = xp.all(xp.isfinite(cap), axis=-1)
    total = xp.where(solvable, solve_fixed_point(target, draft, xp.where(solvable[:, None], cap, 0.0)), xp.inf)
    shift = xp.where(solvable, total, 0.0)[:, None]  # finite everywhere; the fallback rows ignore it
    t = xp.minimum(xp.maximum(draft * (1.0 + shift) - target, 0.0), cap)
    cover = xp.minimum(target, draft)
    accepted = xp.where(solvable[:, None], xp.minimum(xp.maximum(target - draft * _others(t), 0.0), cover), cover)
    # From here on everything derives from the A actually used: exact for any S.
    reach = _step_two_reach(draft, draft - accepted, rest)
    left = target - accepted
    taken = xp.minimum(left, reach)
    with float_errors_allowed(reach):
        second = xp.where(reach > 0, taken / reach, 1.0)
    return LatestFirstPlan(target=target, draft=draft, accepted=accepted, reach=reach, second=second,
                           residual=left - taken, total=total)


def solve_fixed_point(target: Array, draft: Array, cap: Array) -> Array:
    """Smallest root S (B,) of ``G(S) = S - sum_x clip(q_x (1 + S) - r_x, 0, c_x)`` per row.

    ``target`` r, ``draft`` q (B, V; q may be 0: such tokens never rise), ``cap`` c = ``q / (1 - q)``
    (finite). Each clipped term is a difference of two hinges, so with ``s = 1 + S``,
    ``F = h_{r,q}(s) - h_{r+c,q}(s)`` where ``h_{a,q}(s) = sum_x (s q_x - a_x)+`` is the ratio-profile hinge
    (breakpoints ``r_x/q_x`` and ``(r_x + c_x)/q_x``). ``G`` is non-decreasing with ``G(s = 1) <= 0``. The
    roots can form an interval (where every drafted token rises, e.g. p == q); the smallest is returned:
    0 where ``G(0) = 0``; otherwise a binary search for the last breakpoint ``low`` with ``G < 0`` over the
    first profile, then over the second's inside the bracket found, leaves a bracket ``[low, high]`` free of
    breakpoints, on which ``G = s (1 - Q_a + Q'_b) - 1 + P_a - P'_b`` (prefix sums of the two profiles at
    their pieces a, b) is linear with a positive slope: its root is exact up to rounding (a slope that
    rounding made non-positive gives ``high - 1``, or ``low - 1`` if high is infinite). O(V log V) per row
    for the two sorts, then O(log^2 V); the bisection runs ``V.bit_length()`` lockstep rounds (no host
    sync), on NumPy until every row's bracket is final (one row: on NumPy scalars, ``resispec.rows.row_values``).
    """
    rows = row_values(target)
    rising, saturated = RowRatioProfile(target, draft), RowRatioProfile(target + cap, draft)

    def hinge(profile: RowRatioProfile, s: Array) -> Array:
        """``h(s) = max(s Q_i - P_i, 0)`` on the piece i of s, one point per row."""
        piece = rows.search(profile.ratio, s)
        return rows.maximum(s * rows.at(profile.q_prefix, piece) - rows.at(profile.p_prefix, piece), 0.0)

    def excess(s: Array) -> Array:
        with float_errors_allowed(target):  # rows done searching may probe an infinite ratio: masked by the caller
            return s - 1.0 - hinge(rising, s) + hinge(saturated, s)

    vocab = target.shape[1]
    low, high = rows.full(1.0), rows.full(float("inf"))
    for profile in (rising, saturated):
        first, last = rows.search(profile.ratio, low), rows.search(profile.ratio, high, side="left")
        i, j = first, last  # breakpoints strictly inside (low, high): ratio[first:last]
        for _ in range(vocab.bit_length()):  # a bisection of at most V breakpoints ends in time
            searching = i < j
            if type(target) is np.ndarray and not rows.any(searching):  # on a device the check would sync
                break
            middle = (i + j) // 2
            below = excess(rows.at(profile.ratio, rows.minimum(middle, vocab - 1))) < 0
            i = rows.where(searching & below, middle + 1, i)
            j = rows.where(searching & rows.logical_not(below), middle, j)
        low = rows.where(i > first, rows.at(profile.ratio, rows.maximum(i - 1, 0)), low)
        high = rows.where(i < last, rows.at(profile.ratio, rows.minimum(i, vocab - 1)), high)
    a, b = rows.search(rising.ratio, low), rows.search(saturated.ratio, low)
    slope = 1.0 - rows.at(rising.q_prefix, a) + rows.at(saturated.q_prefix, b)
    with float_errors_allowed(target):
        root = (1.0 - rows.at(rising.p_prefix, a) + rows.at(saturated.p_prefix, b)) / slope
    flat = rows.where(rows.isfinite(high), high, low) - 1.0
    solved = rows.where(slope > 0, rows.minimum(rows.maximum(root, low), high) - 1.0, flat)
    return rows.where(excess(rows.full(1.0)) >= -ROOT_SLACK * vocab, rows.full(0.0), solved)
