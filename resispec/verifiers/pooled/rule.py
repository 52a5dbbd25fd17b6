"""pooled: exact, and acceptance-optimal for i.i.d. candidates (reaches ``alpha*``); docs/pooled.md.

A select-then-verify verifier (``resispec.verifiers.select_then_verify``): *select* one of the k
candidates by a randomised rule whose selected token has law ``t``, then run single-draft speculative
sampling of the selected token y against p: accept y with probability ``min(1, p(y)/t(y))``, else emit
from ``norm((p - t)+)``. Exact for any selection rule whose true law is ``t``: ``min(p, t) + (p - t)+ = p``.
Acceptance ``sum_y min(p(y), t(y))``.

The selection is the priority-score rule of ``resispec.verifiers.pooled.plan`` (max-ratio selection
reshaped by pools), whose law is ``t = max(p, mu q)`` on the optimal cut ``H*`` and ``min(p, lam q)`` off it.
Then ``min(p, t) = p`` on ``H*`` and ``= t`` off it, so the acceptance is
``p(H*) + t(off H*) = p(H*) + 1 - q(H*)^k = alpha*``, the i.i.d. optimum: no exact verifier of
i.i.d. candidates accepts more. A rejection needs ``t(y) > p(y)``, so ``y in H*``, which happens
only when every candidate is in ``H*``; the residual lives off ``H*``, so it never emits a candidate.
Exact (proof in docs/pooled.md; exact-law and sampling audits in tests/resispec/verifiers/test_pooled.py).

Cost: the plan (sort, cut, ``t``, pools) is O(V log V) once per ``(p, q, k)``; one tuple then costs
O(k log V): a ``searchsorted`` over the row's pools per candidate, one over the residual's
precomputed cumulative sum.

Uniform layout (``uniforms_needed(k) = 2k + 2``; the engine runs this same rule):

- ``u[i]``, ``i < k``: which interval holds candidate i's score (``pooled.plan.score_intervals``);
- ``u[k + i]``: the score's position inside that interval (compared only on equal intervals);
- ``u[2k]``: accept the selected candidate y iff ``u[2k] < accept(y) = min(1, p(y)/t(y))``;
- ``u[2k + 1]``: the residual token by inverse CDF over token ids ascending.

Returned index: the selected candidate's position on acceptance, -1 for a residual draw. A selected
token with ``p = 0`` is never accepted, and if the residual has no mass left (through rounding only)
a rejection draws from p (the contract's fallback, ``resispec.residual``).
"""

from __future__ import annotations

from resispec.rows import Array
from resispec.validation import as_count
from resispec.verifiers.pooled.plan import PooledPlan, pooled_plan, select, selection_probabilities
from resispec.verifiers.select_then_verify import SelectThenVerify


class Pooled(SelectThenVerify):
    """Pooled priority-score selection, then single-draft speculative sampling. Exact; reaches alpha*."""

    name = "pooled"
    drafting = "iid"
    claims_exact = True
    single_candidate_is_sps = True
    closed_form = True
    single_step = True
    colour = "tab:brown"
    marker = "*"

    def uniforms_needed(self, k: int) -> int:
        """``2k + 2``: an interval and a position uniform per candidate, then accept and residual."""
        return 2 * as_count(k) + 2

    def _row_plan(self, p: Array, q: Array, k: int) -> PooledPlan:
        return pooled_plan(p, q, k)

    def _row_select(self, plan: PooledPlan, candidates: Array, u: Array) -> Array:
        k = candidates.shape[1]
        return select(plan, candidates, u[:, :k], u[:, k:])

    def _row_selection_probabilities(self, plan: PooledPlan, candidates: Array) -> Array:
        return selection_probabilities(plan, candidates)
