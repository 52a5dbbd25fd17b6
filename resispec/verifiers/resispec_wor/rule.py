"""resispec_wor: residual shaping for candidates drawn without replacement ("latest first").

State ``(r, q', n)``: the current target, the draft renormalised over the undrawn tokens, the number of
candidates left; ``r = p``, ``q' = q``, ``n = k`` at the start. With ``n >= 2``, build the k = 2
latest-first plan for ``(r, q')`` (the verifier's plan, ``resispec.verifiers.resispec_wor.plan``: step-1
accepted mass A, step-2 reach C and acceptance ``a_2``, final residual ``f``) and accept the candidate x
with probability ``A_x / q'_x``; on rejection the next state is ``(r_x, q'_{-x}, n - 1)`` with the law the
plan would emit from there, ``r_x = q'_{-x} a_2 + (1 - <q'_{-x}, a_2>) norm(f)``. With ``n = 1``: the
rrs_wor step (accept ``min(1, r_x / q'_x)``, else emit from ``norm((r - q')+)``).

Exact, by induction on n: if every state emits its own target, the state ``(r, q', n)`` emits
``q' a + sum_x q'_x (1 - a_x) r_x = A + (r - A) = r``, because the plan's rejected branches average back
to the residual, ``sum_x s_x r_x = min(r - A, C) + (r - A - C)+ = r - A`` (``s_x = q'_x - A_x``).
For k = 2 the rule is the latest-first plan itself (the n = 1 step reproduces ``a_2`` and f), optimal
among sequential verifiers of two WOR candidates; for k >= 3 near-optimal (observed; docs/resispec_wor.md).
Per step O(V log V): the plan's fixed point is a scalar monotone equation solved on two sorted
ratio profiles. Acceptance: exact enumeration of WOR tuples (small V); for k = 2 the plan's closed form.

Written once over rows (NumPy or torch). The first plan (every row) is the verifier's plan; a later
step's plan is built only for the rows still undecided (as the decision loop reports them), less those
whose step accepts with certainty (``a = 1``): the state, plan and candidates are cut down to those rows
and the yielded ``a_i`` and the final residual are placed back in all B rows (decided rows: ``a = 1``
and an empty residual, never used).
"""

from __future__ import annotations

from array_api_compat import device as device_of

from resispec.rows import Array, namespace, placed_rows, zero_at_
from resispec.verifiers.base import BatchedSequentialVerifier, BoundVerifier, RowStepGenerator
from resispec.verifiers.rejection import rejection_acceptance, rejection_residual
from resispec.verifiers.resispec_wor.plan import LatestFirstPlan, latest_first_plan


class ResiSpecWithoutReplacement(BatchedSequentialVerifier):
    """Latest-first residual shaping over WOR draws: re-plan k = 2 at every step. Exact."""

    name = "resispec_wor"
    drafting = "wor"
    claims_exact = True
    single_candidate_is_sps = True
    closed_form = True
    closed_form_max_k = 2
    colour = "tab:pink"
    marker = "s"

    def _row_plan(self, p: Array, q: Array, k: int) -> LatestFirstPlan | None:
        """The first step's plans (shared by every tuple); None for k = 1 (a plain rrs_wor step)."""
        return latest_first_plan(p, q) if k >= 2 else None

    def _row_steps(self, p: Array, q: Array, candidates: Array, plan: LatestFirstPlan | None) -> RowStepGenerator:
        xp = namespace(p, q)
        batch, k = candidates.shape
        rows = xp.arange(batch, device=device_of(p))  # the rows whose state is carried, ascending
        target, undrawn, candidates_left = p, q, candidates
        for i in range(k):
            candidate = candidates_left[:, i]
            if i == k - 1:
                proposal = undrawn / xp.sum(undrawn, axis=-1, keepdims=True)  # the undrawn mass, summed directly
                yield _in_all_rows(rejection_acceptance(target, proposal, candidate), rows, batch, 1.0)
                return _in_all_rows(rejection_residual(target, proposal), rows, batch, 0.0)
            acceptance = plan.first_acceptance(candidate)
            undecided = yield _in_all_rows(acceptance, rows, batch, 1.0)
            carry = acceptance < 1.0
            if undecided is not None:
                carry = carry & xp.take(undecided, rows, axis=0)
            kept = xp.nonzero(carry)[0]
            if kept.shape[0] == 0:  # every row decided: a = 1 for the steps left, no residual
                for _ in range(k - 1 - i):
                    yield xp.ones((batch,), dtype=p.dtype, device=device_of(p))
                return xp.zeros_like(p)
            if kept.shape[0] < rows.shape[0]:
                rows, plan = xp.take(rows, kept, axis=0), plan.rows(kept)
                candidate, candidates_left = xp.take(candidate, kept, axis=0), xp.take(candidates_left, kept, axis=0)
                undrawn = xp.take(undrawn, kept, axis=0)
            else:
                undrawn = xp.asarray(undrawn, copy=True)
            target = plan.rejection_target(candidate)
            undrawn = zero_at_(undrawn, candidate)
            if i < k - 2:
                plan = latest_first_plan(target, undrawn)

    def _acceptance(self, bound: BoundVerifier) -> float:
        """k = 2: the plan's closed form ``sum A + sum min(p - A, C)``; otherwise exact enumeration."""
        if bound.k == 2:
            return float(bound.plan.acceptance[0])
        return super()._acceptance(bound)


def _in_all_rows(values: Array, rows: Array, batch: int, fill: float) -> Array:
    """``values`` of the carried rows ``rows`` (ascending) in all ``batch`` rows, ``fill`` elsewhere."""
    return values if rows.shape[0] == batch else placed_rows(values, rows, batch, fill)

