"""Batched k = 2 latest-first plans: torch port of ``resispec.wor_shaping`` (resispec_wor's building block).

Per node (row): target ``r``, draft ``q`` (the undrawn weights renormalised), two WOR candidates.
Step 1 accepts x with probability ``A_x / q_x``; step 2 is reached with y with probability
``C(y) = q_y (S - t_y)`` and accepts it with probability ``a_2(y) = min(1, (r_y - A_y) / C(y))``; all
rejected: emit from ``f = norm((r - A - C)+)``. Latest first, ``A_x = clip(r_x - C(x), 0, q_x)``, is
the scalar fixed point (NumPy module docstring)

    S = F(S) = sum_x clip(q_x (1 + S) - r_x, 0, c_x),   c_x = q_x / (1 - q_x),

with ``F = h_{r,q}(s) - h_{r+c,q}(s)`` (``s = 1 + S``), the hinges of two ratio profiles. Every node
solves it at once by the NumPy algorithm: the two ``RowRatioProfile`` sorts, a lockstep binary
search of the first profile's breakpoints and then of the second's inside the bracket found
(``V.bit_length()`` rounds, no host sync), and the exact root of the final linear piece. Whatever S
comes out, the plan is exact: C, ``a_2`` and f are derived from the A actually used.

Parity. On CPU a plan is NumPy's bit for bit: the same ratio order (``sort_by_ratio``), the same
sequential prefix sums, every row sum by NumPy's pairwise summation (``row_sums``; a sum over the
tokens but one, ``_others``' cancellation-free entry, by NumPy's sum of the shortened row), the same
elementwise float64 formulas and the same first-maximum ``argmax``. Elsewhere sums are taken in
another order, so plans agree to rounding. Numerics (``1 - q_x`` and ``S - t_x`` summed over the other
tokens, the heaviest token's term of C, the ``A = min(r, q)`` fallback where ``q / (1 - q)``
overflows, tokens with ``q = 0``) as in NumPy, node by node.

Cost per plan: two ratio sorts per row and a few dozen passes over (B, V), on CPU a few rows at a
time (``CPU_CHUNK_ELEMENTS``, as pooled's plan: B = 64, V = 49152 two rows at a time is 2 to 3 times
faster than all rows at once); one host sync per ``_others`` (three per plan), to sum the rows whose
heaviest entry exceeds half their total.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

from engine.verifiers.validation import row_sums
from resispec.residual import supported_residual
from resispec.row_ratio_profile import RowRatioProfile
from resispec.rows import CPU_CHUNK_ELEMENTS


def _others(values: torch.Tensor) -> torch.Tensor:
    """``sum_{y != x} values_y`` for every x (B, V), non-negative rows, without cancellation.

    ``total - v_x``, except at a row's largest entry above half its total, where the other entries
    are summed directly (as ``resispec.drafting.undrawn_mass`` sums them: the row without it).
    """
    total = row_sums(values)
    others = total - values
    largest = values.argmax(dim=-1, keepdim=True)
    heavy = torch.nonzero(values.gather(1, largest)[:, 0] > 0.5 * total[:, 0])[:, 0]
    if heavy.numel():
        where = largest[heavy]
        keep = torch.ones((heavy.numel(), values.shape[1]), dtype=torch.bool, device=values.device)
        keep.scatter_(1, where, False)
        shortened = values[heavy][keep].reshape(heavy.numel(), -1)
        others[heavy, where[:, 0]] = row_sums(shortened)[:, 0]
    return others


def _step_two_reach(draft: torch.Tensor, rejected: torch.Tensor, rest: torch.Tensor) -> torch.Tensor:
    """``C(y) = sum_{x != y} s_x q_y / (1 - q_x)`` (B, V), ``rest = 1 - q`` summed directly.

    The heaviest token d's term is added as ``s_d (q_y / (1 - q_d))`` (``q_y / (1 - q_d) <= 1``), so C
    cannot overflow even where ``1 - q_d`` is subnormal.
    """
    heaviest = draft.argmax(dim=-1, keepdim=True)
    rate = (rejected / rest).scatter_(1, heaviest, 0.0)
    share = (draft / rest.gather(1, heaviest)).scatter_(1, heaviest, 0.0)
    reach = draft * _others(rate)
    reach += rejected.gather(1, heaviest) * share
    return reach


@dataclass(frozen=True)
class TorchLatestFirstPlan:
    """The k = 2 latest-first plans of B nodes; every field (B, V) by token id except ``total`` (B,).

    ``target`` r, ``draft`` q, ``accepted`` A, ``reach`` C, ``second`` ``a_2`` (1 where C = 0), ``residual`` the
    unnormalised final residual ``(r - A - C)+``, ``total`` the fixed point S (inf where the node fell
    back to ``A = min(r, q)``).
    """

    target: torch.Tensor
    draft: torch.Tensor
    accepted: torch.Tensor
    reach: torch.Tensor
    second: torch.Tensor
    residual: torch.Tensor
    total: torch.Tensor

    def rows(self, index: torch.Tensor) -> TorchLatestFirstPlan:
        """The plans of the nodes ``index`` (long (B',)) only."""
        return TorchLatestFirstPlan(**{field.name: getattr(self, field.name)[index] for field in fields(self)})

    def first_acceptance(self, candidate: torch.Tensor) -> torch.Tensor:
        """Step 1's acceptance ``min(A_x / q_x, 1)`` (B,) of each node's first candidate x (B,).

        1 where rejecting x would leave ``r_x`` without mass (no final residual and no other drafted
        token with ``a_2 > 0``): there ``s_x = 0`` exactly and only rounding made ``A_x < q_x``.
        """
        index = candidate[:, None]
        acceptance = (self.accepted.gather(1, index) / self.draft.gather(1, index))[:, 0].clamp(max=1.0)
        reachable = ((self.draft > 0) & (self.second > 0)).scatter_(1, index, False).any(dim=-1)
        stranded = ~(self.residual > 0).any(dim=-1) & ~reachable  # residual >= 0: "sum > 0" is "any > 0"
        return torch.where(stranded, 1.0, acceptance)

    def rejection_target(self, candidate: torch.Tensor) -> torch.Tensor:
        """The law each plan emits once its candidate x (B,) is rejected (B, V), normalised:
        ``r_x = q_{-x} a_2 + <q_{-x}, 1 - a_2> norm(f)``, ``q_{-x}`` the draft without x renormalised.

        The missed mass is summed from non-negative terms; f is normalised before scaling.
        """
        masked = self.draft.scatter(1, candidate[:, None], 0.0)
        proposal = masked / row_sums(masked)
        law = proposal * self.second
        mass = row_sums(self.residual)
        missed = row_sums(proposal * (1.0 - self.second))
        law = torch.where(mass > 0, law + missed * (self.residual / mass), law)
        law = supported_residual(law, self.target)  # r itself where rounding left no mass (masses near 1e-308)
        return law / row_sums(law)


def latest_first_plan(target: torch.Tensor, undrawn: torch.Tensor) -> TorchLatestFirstPlan:
    """The latest-first plans of targets ``target`` (B, V), rows summing to 1, and undrawn draft weights.

    ``undrawn`` (B, V): non-negative, at least two positive entries per row (q with the drawn tokens
    zeroed, unnormalised). Tokens off a row's draft support get ``A = C = 0``. On CPU the plans are
    built ``max(1, CPU_CHUNK_ELEMENTS // V)`` rows at a time (their passes then run in cache),
    elsewhere all rows at once.
    """
    batch, vocab = target.shape
    rows = max(1, CPU_CHUNK_ELEMENTS // vocab) if target.device.type == "cpu" else batch
    if rows >= batch:
        return _plan(target, undrawn)
    parts = [_plan(target[start:start + rows], undrawn[start:start + rows]) for start in range(0, batch, rows)]
    return TorchLatestFirstPlan(**{field.name: torch.cat([getattr(part, field.name) for part in parts])
                                   for field in fields(TorchLatestFirstPlan)})


def _plan(target: torch.Tensor, undrawn: torch.Tensor) -> TorchLatestFirstPlan:
    """``latest_first_plan`` of all the rows at once."""
    draft = undrawn / row_sums(undrawn)
    rest = _others(draft)  # 1 - q_x, summed directly
    cap = draft / rest  # q / (1 - q); 0 off the support, inf where 1 - q_x underflowed
    solvable = cap.isfinite().all(dim=-1)
    total = torch.where(solvable, solve_fixed_point(target, draft, torch.where(solvable[:, None], cap, 0.0)),
                        torch.inf)
    shift = torch.where(solvable, total, 0.0)[:, None]  # finite everywhere; the fallback rows ignore it
    t = torch.minimum((draft * (1.0 + shift) - target).clamp_(min=0.0), cap)
    cover = torch.minimum(target, draft)
    accepted = torch.where(solvable[:, None],
                           torch.minimum((target - draft * _others(t)).clamp_(min=0.0), cover), cover)
    # From here on everything derives from the A actually used: exact for any S.
    reach = _step_two_reach(draft, draft - accepted, rest)
    left = target - accepted
    taken = torch.minimum(left, reach)
    second = torch.where(reach > 0, taken / reach, 1.0)
    return TorchLatestFirstPlan(target=target, draft=draft, accepted=accepted, reach=reach, second=second,
                                residual=left - taken, total=total)


def solve_fixed_point(target: torch.Tensor, draft: torch.Tensor, cap: torch.Tensor) -> torch.Tensor:
    """Smallest root S (B,) of ``G(S) = S - sum_x clip(q_x (1 + S) - r_x, 0, c_x)`` per row.

    ``target`` r, ``draft`` q, ``cap`` c (B, V), c finite. With ``s = 1 + S``,
    ``G = s - 1 - h_{r,q}(s) + h_{r+c,q}(s)``: 0 where ``G(s = 1) >= 0``; otherwise the last breakpoint
    ``low`` with ``G < 0`` and the next one ``high``, searched over the first profile's breakpoints
    above 1 and then over the second's inside that bracket, leave one linear piece of G, whose root
    ``(1 - P_a + P'_b) / (1 - Q_a + Q'_b)`` (pieces a, b of ``low``) is clipped into the bracket.
    A slope that rounding made non-positive returns ``high - 1`` (``low - 1`` if high is infinite).
    """
    rising, saturated = RowRatioProfile(target, draft), RowRatioProfile(target + cap, draft)

    def excess(s: torch.Tensor) -> torch.Tensor:
        return s - 1.0 - rising.h(s) + saturated.h(s)

    batch, vocab = target.shape
    low = target.new_ones(batch, 1)
    high = torch.full_like(low, torch.inf)
    for profile in (rising, saturated):
        first = torch.searchsorted(profile.ratio, low, right=True)
        last = torch.searchsorted(profile.ratio, high)  # breakpoints strictly inside: [first, last)
        i, j = first, last
        for _ in range(vocab.bit_length()):  # a bisection of at most V breakpoints ends in time
            middle = (i + j) // 2
            below = excess(profile.ratio.gather(1, middle.clamp(max=vocab - 1))) < 0
            searching = i < j
            i = torch.where(searching & below, middle + 1, i)
            j = torch.where(searching & ~below, middle, j)
        low = torch.where(i > first, profile.ratio.gather(1, (i - 1).clamp(min=0)), low)
        high = torch.where(i < last, profile.ratio.gather(1, i.clamp(max=vocab - 1)), high)
    a, b = rising.piece_of(low), saturated.piece_of(low)
    slope = 1.0 - rising.q_prefix.gather(1, a) + saturated.q_prefix.gather(1, b)
    root = (1.0 - rising.p_prefix.gather(1, a) + saturated.p_prefix.gather(1, b)) / slope
    flat = torch.where(high.isfinite(), high, low) - 1.0
    solved = torch.where(slope > 0, torch.minimum(torch.maximum(root, low), high) - 1.0, flat)
    return torch.where(excess(target.new_ones(batch, 1)) >= 0, 0.0, solved)[:, 0]
