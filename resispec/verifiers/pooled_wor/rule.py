"""pooled_wor: select one WOR candidate by a cut and thinned scans, then single-draft verification.

A select-then-verify verifier (``resispec.verifiers.select_then_verify``, docs/pooled.md): *select* one
of the k candidates by a randomised rule whose selected token has law ``t``, then accept it with
probability ``min(1, p(y)/t(y))``, else emit from ``norm((p - t)+)``. Exact for any selection rule whose
true law is ``t``: ``min(p, t) + (p - t)+ = p``. Acceptance ``sum_y min(p(y), t(y))``, at most alpha*-WOR,
with equality iff ``t >= p`` on an optimal cut, ``t <= p`` off it and ``t(cut) = P_k(cut)``;
select-then-verify can always reach alpha*-WOR (theorem ``pooled_wor.ceiling_reachable``,
docs/pooled_wor.md).

The selection (``resispec.verifiers.pooled_wor.plan``): a ratio-prefix cut H; if every candidate is in
H, scan them by ratio ascending, else scan the candidates outside H by ratio descending; select the
visited candidate with probability ``theta`` (greedy, so each token gets its target mass p where
possible), else the last visited. Where that scan falls short of the least ratio-prefix value, the plan
mixes it with "select the candidate latest in order pi" rules, weights and orders by column generation
(``resispec.verifiers.pooled_wor.mixture``), which stops only at alpha*-WOR (theorem
``pooled_wor.mixture``). Its law ``t`` comes from exponential-race integrals, without enumerating
tuples. The plan is NumPy only, built per row; the selection runs on rows (NumPy or torch).

Uniform layout (``uniforms_needed(k) = k + 2``; the engine runs this same rule):

- ``u[i]``, ``i < k``: candidate i (draw order) is selected when visited iff ``u[i] < theta``; with a
  mixture, ``r = u[0]`` first picks the rule (the scan iff ``r < w_0``, which then reads ``r / w_0``;
  ``pooled_wor.plan.select``);
- ``u[k]``: accept the selected candidate y iff ``u[k] < accept(y)``;
- ``u[k + 1]``: the residual token by inverse CDF over token ids ascending.

Returned index: the selected candidate's position on acceptance, -1 for a residual draw. If rounding
left the residual no mass, a rejection draws from p (the contract's fallback, ``resispec.residual``).
"""

from __future__ import annotations

from resispec.rows import Array
from resispec.validation import as_count
from resispec.verifiers.pooled_wor.plan import PooledWorRows, pooled_wor_plans, select, selection_probabilities
from resispec.verifiers.select_then_verify import SelectThenVerify


class PooledWithoutReplacement(SelectThenVerify):
    """Cut plus thinned scans over WOR candidates, then single-draft speculative sampling. Exact."""

    name = "pooled_wor"
    drafting = "wor"
    claims_exact = True
    single_candidate_is_sps = True  # one WOR draw is one draw from q: t = q, then sps (test_single_candidate.py)
    closed_form = True
    single_step = True
    colour = "tab:olive"
    marker = "P"

    def uniforms_needed(self, k: int) -> int:
        """``k + 2``: a thinning uniform per candidate, then accept and residual."""
        return as_count(k) + 2

    def _row_plan(self, p: Array, q: Array, k: int) -> PooledWorRows:
        return pooled_wor_plans(p, q, k)

    def _row_select(self, plan: PooledWorRows, candidates: Array, u: Array) -> Array:
        return select(plan, candidates, u)

    def _row_selection_probabilities(self, plan: PooledWorRows, candidates: Array) -> Array:
        return selection_probabilities(plan, candidates)
