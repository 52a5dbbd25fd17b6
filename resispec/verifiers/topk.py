"""topk: deterministic top-k candidates (EAGLE-2 style; the draft ratio is taken as 1).

Accept ``x_1`` with probability ``p(x_1)``; else zero ``x_1`` in p, renormalise, accept ``x_2`` with
its new mass; ... All rejected: emit from p with every candidate zeroed, renormalised. Exact (it is
sequential sampling from p, stopping early when the draw is a candidate). Acceptance (closed form)
``p({x_1..x_k})``, the best possible for a fixed candidate set.
"""

from __future__ import annotations

from resispec.drafting import top_k_tokens
from resispec.rows import Array, float_errors_allowed, namespace, value_at, zero_at_
from resispec.verifiers.base import BatchedSequentialVerifier, BoundVerifier, RowStepGenerator


class TopK(BatchedSequentialVerifier):
    """Verification of the draft's top-k tokens against p. Exact.

    A row whose remaining mass is 0 at step i accepted earlier with certainty; its ``0/0`` there is
    never compared.
    """

    name = "topk"
    drafting = "topk"
    claims_exact = True
    closed_form = True
    k_independent = True
    colour = "tab:purple"

    def _row_steps(self, p: Array, q: Array, candidates: Array, plan: None) -> RowStepGenerator:
        xp = namespace(p, q)
        remaining = xp.asarray(p, copy=True)
        for i in range(candidates.shape[1]):
            with float_errors_allowed(remaining):  # 0 / 0 only in a row that accepted for sure, never read
                acceptance = value_at(remaining, candidates[:, i]) / xp.sum(remaining, axis=-1)
            yield acceptance
            zero_at_(remaining, candidates[:, i])
        return remaining

    def _acceptance(self, bound: BoundVerifier) -> float:
        """Closed form ``p(top-k set of q)``."""
        return float(bound.p[top_k_tokens(bound.q, bound.k)].sum())
