"""pooled_wor: select one WOR candidate by a cut and thinned scans, then single-draft verification.

Canonical architecture (docs/pooled.md): *select* one of the k candidates by a randomised rule whose
selected token has law ``t``, then accept it with probability ``min(1, p(y)/t(y))``, else emit from
``norm((p - t)+)``. Exact for any selection rule whose true law is ``t``: ``min(p, t) + (p - t)+ = p``.
Acceptance ``sum_y min(p(y), t(y))``, at most alpha*-WOR, with equality iff ``t >= p`` on an optimal
cut, ``t <= p`` off it and ``t(cut) = P_k(cut)``; select-then-verify can always reach alpha*-WOR
(theorem ``pooled_wor.ceiling_reachable``, docs/pooled_wor.md).

The selection (``resispec.verifiers.pooled_wor_plan``): a ratio-prefix cut H; if every candidate is in
H, scan them by ratio ascending, else scan the candidates outside H by ratio descending; select the
visited candidate with probability ``theta`` (greedy, so each token gets its target mass p where
possible), else the last visited. Its law ``t`` comes from exponential-race integrals, without
enumerating tuples.

Uniform layout (``uniforms_needed(k) = k + 2``):

- ``u[i]``, ``i < k``: candidate i (draw order) is selected when visited iff ``u[i] < theta``;
- ``u[k]``: accept the selected candidate y iff ``u[k] < accept(y)``;
- ``u[k + 1]``: the residual token by inverse CDF over token ids ascending.

Returned index: the selected candidate's position on acceptance, -1 for a residual draw. If the
residual has no mass, a rejection emits the selected candidate (the contract's empty-residual rule).
"""

from __future__ import annotations

import numpy as np

from resispec.validation import as_count
from resispec.verifiers.base import BoundVerifier, Verifier
from resispec.verifiers.pooled_wor_plan import PooledWorPlan, pooled_wor_plan, select, selection_probabilities


class PooledWithoutReplacement(Verifier):
    """Cut plus thinned scans over WOR candidates, then single-draft speculative sampling. Exact."""

    name = "pooled_wor"
    drafting = "wor"
    claims_exact = True
    single_candidate_is_sps = True  # one WOR draw is one draw from q: t = q, then sps (tests/test_single_candidate.py)

    def uniforms_needed(self, k: int) -> int:
        """``k + 2``: a thinning uniform per candidate, then accept and residual."""
        return as_count(k) + 2

    def _prepare(self, p: np.ndarray, q: np.ndarray, k: int) -> PooledWorPlan:
        return pooled_wor_plan(p, q, k)

    def _decide(self, bound: BoundVerifier, candidates: np.ndarray, u: np.ndarray) -> tuple[int, int]:
        plan: PooledWorPlan = bound.plan
        k = candidates.size
        index = select(plan, candidates, u[:k])
        token = int(candidates[index])
        if u[k] < plan.accept[token]:
            return token, index
        return plan.residual_sampler(u[k + 1]), -1

    def _law(self, bound: BoundVerifier, candidates: np.ndarray) -> tuple[np.ndarray, float]:
        """``law = sum_y s(y) [a(y) delta_y + (1 - a(y)) norm((p - t)+)]``, s the selection law given
        the candidates and ``a = plan.accept``."""
        plan: PooledWorPlan = bound.plan
        selected = selection_probabilities(plan, candidates)
        law = np.zeros(bound.p.size)
        accepted = selected * plan.accept[candidates]
        np.add.at(law, candidates, accepted)
        law += (1.0 - accepted.sum()) / plan.residual_sampler.total * plan.residual
        return law, float(accepted.sum())

    def _acceptance(self, bound: BoundVerifier) -> float:
        """Closed form ``sum_y min(p(y), t(y))`` (no tuple enumeration)."""
        return float(np.minimum(bound.p, bound.plan.selection_law).sum())
