"""resispec_wor: residual shaping for candidates drawn without replacement ("latest first").

State ``(r, q', n)``: the current target, the draft renormalised over the undrawn tokens, the number of
candidates left; ``r = p``, ``q' = q``, ``n = k`` at the start. With ``n >= 2``, build the k = 2
latest-first plan for ``(r, q')`` (``resispec.wor_shaping``: step-1 accepted mass A, step-2 reach C and
acceptance ``a_2``, final residual ``f``) and accept the candidate x with probability ``A_x / q'_x``; on
rejection the next state is ``(r_x, q'_{-x}, n - 1)`` with the law the plan would emit from there,
``r_x = q'_{-x} a_2 + (1 - <q'_{-x}, a_2>) norm(f)``. With ``n = 1``: the rrs_wor step (accept
``min(1, r_x / q'_x)``, else emit from ``norm((r - q')+)``).

Exact, by induction on n: if every state emits its own target, the state ``(r, q', n)`` emits
``q' a + sum_x q'_x (1 - a_x) r_x = A + (r - A) = r``, because the plan's rejected branches average back
to the residual, ``sum_x s_x r_x = min(r - A, C) + (r - A - C)+ = r - A`` (``s_x = q'_x - A_x``).
For k = 2 the rule is the latest-first plan itself (the n = 1 step reproduces ``a_2`` and f), optimal
among sequential verifiers of two WOR candidates; for k >= 3 near-optimal (observed; docs/resispec_wor.md).
Per step O(V log V): the plan's fixed point is a scalar monotone equation solved on two sorted
ratio profiles. Acceptance: exact enumeration of WOR tuples (small V); for k = 2 the plan's closed form.
"""

from __future__ import annotations

import numpy as np

from resispec.verifiers.base import BoundVerifier, SequentialVerifier, StepGenerator
from resispec.verifiers.rejection import rejection_step
from resispec.wor_shaping import LatestFirstPlan, latest_first_plan


class ResiSpecWithoutReplacement(SequentialVerifier):
    """Latest-first residual shaping over WOR draws: re-plan k = 2 at every step. Exact."""

    name = "resispec_wor"
    drafting = "wor"
    claims_exact = True
    single_candidate_is_sps = True

    def _prepare(self, p: np.ndarray, q: np.ndarray, k: int) -> LatestFirstPlan | None:
        """The first step's plan (shared by every tuple); None for k = 1 (a plain rrs_wor step)."""
        return latest_first_plan(p, q) if k >= 2 else None

    def _steps(self, bound: BoundVerifier, candidates: np.ndarray) -> StepGenerator:
        target, undrawn, plan = bound.p, bound.q.copy(), bound.plan
        for left, candidate in zip(range(candidates.size, 0, -1), candidates):
            if left == 1:
                acceptance, target = rejection_step(target, undrawn / undrawn.sum(), candidate)
                yield acceptance
                return target
            yield plan.first_acceptance(candidate)
            target = plan.rejection_target(candidate)
            undrawn[candidate] = 0.0
            if left > 2:
                plan = latest_first_plan(target, undrawn)

    def _acceptance(self, bound: BoundVerifier) -> float:
        """k = 2: the plan's closed form ``sum A + sum min(p - A, C)``; otherwise exact enumeration."""
        if bound.k == 2:
            return bound.plan.acceptance
        return super()._acceptance(bound)
