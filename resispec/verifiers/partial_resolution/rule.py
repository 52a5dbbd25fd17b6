"""partial_resolution: exact, reaches the i.i.d. optimum alpha*, resolving only the drawn candidates' pools.

Our construction toward the optimum of Thomas & Pal, "Partial Resolution: Optimal Multi-Draft Speculative
Sampling in Near-Linear Time" (NeurIPS 2025): the paper's rule is not reachable from this machine, only
its abstract (docs/verifiers/partial_resolution.md says what is the paper's and what is ours).

A select-then-verify verifier (``resispec.verifiers.select_then_verify``) with pooled's selection law
``t = max(p, mu q)`` on the optimal cut ``H*``, ``min(p, lam q)`` off it, and pooled's priority-score
selection; the pools of the monotone coupling that realises ``t`` are resolved per tuple for the k drawn
candidates only (``resispec.verifiers.partial_resolution.plan``). The selected y is accepted with
probability ``min(1, p(y)/t(y))``, else a token is drawn from ``norm((p - t)+)``: exact for any selection
whose law is ``t`` (``min(p, t) + (p - t)+ = p``), acceptance ``sum min(p, t) = p(H*) + 1 - q(H*)^k =
alpha*``. Every conditional law equals pooled's (same pools; theory ``partial_resolution.*``).

Cost: per ``(p, q, k)`` one ratio sort and O(V) passes (no coupling built); per tuple
O(k (log V + n)), n the most pools of a drawn candidate.

Uniform layout (``2k + 2``, pooled's): ``u[i]`` (i < k) the interval of candidate i's score, ``u[k + i]``
its position inside, ``u[2k]`` the accept test, ``u[2k + 1]`` the residual by inverse CDF. Returned
index: the selected candidate's position on acceptance, -1 for a residual draw.
"""

from __future__ import annotations

from resispec.rows import Array, gather_rows, namespace
from resispec.validation import as_count
from resispec.verifiers.base import BoundVerifier
from resispec.verifiers.partial_resolution.plan import PartialPlan, partial_plan, select, selection_probabilities
from resispec.verifiers.pooled.plan import highest_score
from resispec.verifiers.select_then_verify import SelectThenVerify


class PartialResolution(SelectThenVerify):
    """pooled's optimal selection with the drawn candidates' pools resolved per tuple. Exact; reaches alpha*."""

    name = "partial_resolution"
    drafting = "iid"
    claims_exact = True
    single_candidate_is_sps = True
    single_step = True

    def uniforms_needed(self, k: int) -> int:
        """``2k + 2``: an interval and a position uniform per candidate, then accept and residual."""
        return 2 * as_count(k) + 2

    def _row_plan(self, p: Array, q: Array, k: int) -> PartialPlan:
        return partial_plan(p, q, k)

    def _row_select(self, plan: PartialPlan, candidates: Array, u: Array) -> Array:
        k = candidates.shape[1]
        return select(plan, candidates, u[:, :k], u[:, k:])

    def _row_selection_probabilities(self, plan: PartialPlan, candidates: Array) -> Array:
        return selection_probabilities(plan, candidates)


class PartialResolutionUnpooled(PartialResolution):
    """partial_resolution with its pools left out: selects the candidate of highest ratio rank. BIASED.

    Known-biased control. The selected token then has the max-ratio law ``f_c = (F_c + q_c)^k - F_c^k``
    (not ``t``), but it is still verified against ``t``: accept with ``min(1, p/t)``, else draw from
    ``norm((p - t)+)``. The output law is ``sum_y f(y) min(1, p(y)/t(y)) delta_y + (sum_y f(y) (1 - min(1,
    p(y)/t(y)))) norm((p - t)+)``: the canonical identity ``min(p, t) + (p - t)+ = p`` needs the selection law
    to be ``t``, so this misses p wherever ``f != t`` (k >= 2 with any pool); for k = 1, ``f = t = q`` and it
    is sps.
    """

    name = "partial_resolution_unpooled"
    claims_exact = False
    single_candidate_is_sps = False  # a control never carries the flag the engine's chain path relies on

    def _row_select(self, plan: PartialPlan, candidates: Array, u: Array) -> Array:
        k = candidates.shape[1]
        return highest_score(gather_rows(plan.rank, candidates), u[:, k:])

    def _acceptance(self, bound: BoundVerifier) -> float:
        """Closed form ``sum_y f(y) min(1, p(y)/t(y))``: the selected token has law ``f``."""
        return float((bound.plan.max_ratio_law[0] * bound.plan.accept[0]).sum())

    def _row_selection_probabilities(self, plan: PartialPlan, candidates: Array) -> Array:
        """Uniform among the copies of the highest-ranked token (each copy's position is uniform)."""
        xp = namespace(candidates)
        ranks = gather_rows(plan.rank, candidates)
        top = xp.astype(ranks == xp.max(ranks, axis=-1, keepdims=True), plan.q.dtype)
        return top / xp.sum(top, axis=-1, keepdims=True)
