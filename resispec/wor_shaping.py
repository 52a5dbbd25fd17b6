"""The k = 2 "latest first" plan for candidates drawn without replacement (resispec_wor's building block).

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
everything); the smallest root is used (S = 0 when p == q: accept every candidate at once). The solve
(``solve_fixed_point``) writes F as a difference of two ratio-profile hinges, binary-searches their
sorted breakpoints and finishes with the exact root of the final linear piece: O(V log V), never O(V^2).
The plan's acceptance ``sum A + sum min(r - A, C)`` is the best of any sequential verifier of two WOR
candidates (see docs/resispec_wor.md; checked against ``bounds_wor.sequential_optimum_wor_lp``).

Numerics: ``1 - q_x`` and ``S - t_x`` are sums over the other tokens (``_others``): a difference
``total - v_x`` cancels catastrophically only for an entry above half the total, which is summed
directly. C adds the heaviest token's term as ``s_d (q_y / (1 - q_d))`` (``_step_two_reach``), so it
cannot overflow. If ``q / (1 - q)`` itself overflows (``1 - q_x`` below ~1e-308), S is not
representable and the plan falls back to ``A = min(r, q)`` (exact, not optimal). Tokens with
``q_x = 0`` (drawn, or outside the draft) take no part: ``A = C = 0`` there and their target mass goes
to the final residual.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from resispec.drafting import masked_draft, undrawn_mass
from resispec.ratio_profile import RatioProfile
from resispec.residual import supported_residual


def _others(values: np.ndarray) -> np.ndarray:
    """``sum_{y != x} values_y`` for every x (non-negative values, shape (V,)), without cancellation."""
    total = values.sum()
    others = total - values
    largest = int(values.argmax())
    if values[largest] > 0.5 * total:
        others[largest] = undrawn_mass(values, np.array([largest]))
    return others


def _step_two_reach(draft: np.ndarray, rejected: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """``C(y) = sum_{x != y} s_x q_y / (1 - q_x)`` (shape (V,)); ``rest = 1 - q`` summed directly.

    Only the heaviest token d can have ``1 - q_d < 1/2`` (for x != d, ``1 - q_x >= q_d``), so its term
    is added as ``s_d (q_y / (1 - q_d))`` with ``q_y / (1 - q_d) <= 1``: no overflow even when
    ``1 - q_d`` is subnormal, where ``q_y sum_x s_x / (1 - q_x)`` would overflow.
    """
    heaviest = int(draft.argmax())
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # only at the heaviest token
        rate = rejected / rest
        share = draft / rest[heaviest]
    rate[heaviest] = 0.0
    share[heaviest] = 0.0
    reach = draft * _others(rate)
    reach += rejected[heaviest] * share
    return reach


@dataclass(frozen=True)
class LatestFirstPlan:
    """The k = 2 latest-first plan for target ``target`` and draft ``draft`` (both shape (V,), summing to 1).

    ``accepted`` is A (step-1 accepted mass), ``reach`` is C (probability of reaching step 2 with each
    token), ``second`` is ``a_2 = min(r - A, C) / C`` (1 where C = 0), ``residual`` is the unnormalised
    final residual ``(r - A - C)+`` and ``total`` the fixed point S (inf when ``1 - q_x`` underflowed
    and the plan fell back to ``A = min(r, q)``). ``acceptance`` is the plan's two-candidate
    acceptance ``sum A + sum min(r - A, C)``.
    """

    target: np.ndarray
    draft: np.ndarray
    accepted: np.ndarray
    reach: np.ndarray
    second: np.ndarray
    residual: np.ndarray
    total: float

    @property
    def acceptance(self) -> float:
        return float(self.accepted.sum() + np.minimum(self.target - self.accepted, self.reach).sum())

    def first_acceptance(self, candidate: int) -> float:
        """Step 1's acceptance probability ``A_x / q_x`` for the first candidate x.

        1 when rejecting x would leave ``r_x`` without mass (no final residual and no other drafted
        token with ``a_2 > 0``): then ``s_x = 0`` in exact arithmetic and only rounding made ``A_x < q_x``.
        """
        acceptance = min(float(self.accepted[candidate] / self.draft[candidate]), 1.0)
        if acceptance < 1.0 and not self.residual.sum() > 0:
            reachable = (self.draft > 0) & (self.second > 0)
            reachable[candidate] = False
            if not reachable.any():
                return 1.0
        return acceptance

    def rejection_target(self, candidate: int) -> np.ndarray:
        """The law the plan emits once x is rejected: ``r_x = q_{-x} a_2 + (1 - <q_{-x}, a_2>) norm(f)``.

        ``q_{-x}`` is the draft with x removed (renormalised by summing the undrawn mass). The missing
        mass ``<q_{-x}, 1 - a_2>`` is summed from non-negative terms (no ``1 - dot`` cancellation).
        Averaged over the rejections, ``sum_x s_x r_x = r - A``: the recursion's exactness identity.
        """
        proposal = masked_draft(self.draft, np.array([candidate]))
        law = proposal * self.second
        residual_mass = self.residual.sum()
        if residual_mass > 0:
            law += np.sum(proposal * (1.0 - self.second)) * (self.residual / residual_mass)
        law = supported_residual(law, self.target)  # r itself if rounding left no mass (masses near 1e-308)
        return law / law.sum()


def latest_first_plan(target: np.ndarray, undrawn: np.ndarray) -> LatestFirstPlan:
    """The k = 2 latest-first plan for ``target`` (shape (V,), sums to 1) and the undrawn draft weights.

    ``undrawn`` (shape (V,), non-negative, at least two positive entries) is q with the drawn tokens
    zeroed, unnormalised; the draft is ``undrawn / sum(undrawn)`` and ``1 - q_x`` is the undrawn mass of
    the other tokens divided by the same sum. Tokens off the draft's support get ``A = C = 0``.
    """
    draft = undrawn / undrawn.sum()
    rest = _others(draft)  # 1 - q_x, summed directly
    with np.errstate(divide="ignore", over="ignore"):
        cap = draft / rest  # q / (1 - q); 0 off the draft's support
        total = solve_fixed_point(target, draft, cap) if np.isfinite(cap).all() else np.inf
    if np.isfinite(total):
        t = np.minimum(np.maximum(draft * (1.0 + total) - target, 0.0), cap)
        accepted = np.minimum(np.maximum(target - draft * _others(t), 0.0), np.minimum(target, draft))
    else:  # 1 - q_x underflowed: S is not representable; accept as rrs_wor does (exact, not optimal)
        accepted = np.minimum(target, draft)
    # Everything from here on is derived from the A actually used, so the plan is exact for any S.
    reach = _step_two_reach(draft, draft - accepted, rest)
    left = target - accepted
    taken = np.minimum(left, reach)
    with np.errstate(divide="ignore", invalid="ignore"):
        second = np.where(reach > 0, taken / reach, 1.0)
    return LatestFirstPlan(target=target, draft=draft, accepted=accepted, reach=reach, second=second,
                           residual=left - taken, total=total)


def solve_fixed_point(target: np.ndarray, draft: np.ndarray, cap: np.ndarray) -> float:
    """Root S of ``G(S) = S - sum_x clip(q_x (1 + S) - r_x, 0, c_x)`` (see the module docstring).

    ``target`` r, ``draft`` q (shape (V,), q may be 0: such tokens never rise) and ``cap`` c =
    ``q / (1 - q)`` (finite). Each clipped term is a difference of two hinges, so with ``s = 1 + S``,
    ``F = h_{r,q}(s) - h_{r+c,q}(s)`` where ``h_{a,q}(s) = sum_x (s q_x - a_x)+`` is the ratio-profile
    hinge of ``resispec.ratio_profile`` (breakpoints ``r_x/q_x`` and ``(r_x + c_x)/q_x``). ``G`` is
    non-decreasing with ``G(s = 1) <= 0``. The roots can form an interval (where every drafted token
    rises, e.g. p == q); the smallest is returned: 0 if ``G(0) = 0``, otherwise a binary search for
    the last breakpoint with ``G < 0`` over the first profile, then over the second's inside the
    bracket found, leaves a bracket free of breakpoints, on which
    ``G = s (1 - Q_a + Q'_b) - 1 + P_a - P'_b`` (prefix sums of the two profiles at their pieces a, b)
    is linear with a positive slope: its root is exact up to rounding. O(V log V) for the two sorts,
    then O(log^2 V).
    """
    rising, saturated = RatioProfile(target, draft), RatioProfile(target + cap, draft)

    def excess(s: float) -> float:
        return s - 1.0 - rising.h(s) + saturated.h(s)

    if excess(1.0) >= 0:
        return 0.0
    low, high = 1.0, np.inf
    for profile in (rising, saturated):
        first = int(profile.ratio.searchsorted(low, side="right"))
        last = int(profile.ratio.searchsorted(high, side="left"))
        i, j = first, last  # breakpoints strictly inside (low, high): ratio[first:last]
        while i < j:
            middle = (i + j) // 2
            if excess(float(profile.ratio[middle])) < 0:
                i = middle + 1
            else:
                j = middle
        if i > first:
            low = float(profile.ratio[i - 1])
        if i < last:
            high = float(profile.ratio[i])
    a, b = int(rising.piece_of(low)), int(saturated.piece_of(low))
    slope = 1.0 - rising.q_prefix[a] + saturated.q_prefix[b]
    if not slope > 0:  # rounding only: G(low) < 0 <= G(high) on a linear piece needs a positive slope
        return high - 1.0 if np.isfinite(high) else low - 1.0
    root = (1.0 - rising.p_prefix[a] + saturated.p_prefix[b]) / slope
    return float(min(max(root, low), high)) - 1.0
