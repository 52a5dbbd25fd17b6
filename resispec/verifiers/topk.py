"""topk: deterministic top-k candidates (EAGLE-2 style; the draft ratio is taken as 1).

Accept ``x_1`` with probability ``p(x_1)``; else zero ``x_1`` in p, renormalise, accept ``x_2`` with
its new mass; ... All rejected: emit from p with every candidate zeroed, renormalised. Exact (it is
sequential sampling from p, stopping early when the draw is a candidate). Acceptance (closed form)
``p({x_1..x_k})``, the best possible for a fixed candidate set.
"""

from __future__ import annotations

import numpy as np

from resispec.drafting import top_k_tokens
from resispec.verifiers.base import BoundVerifier, SequentialVerifier, StepGenerator


class TopK(SequentialVerifier):
    """Verification of the draft's top-k tokens against p. Exact."""

    name = "topk"
    drafting = "topk"
    claims_exact = True

    def _steps(self, bound: BoundVerifier, candidates: np.ndarray) -> StepGenerator:
        remaining = bound.p.copy()
        for candidate in candidates:
            yield remaining[candidate] / remaining.sum()
            remaining[candidate] = 0.0
        return remaining

    def _acceptance(self, bound: BoundVerifier) -> float:
        """Closed form ``p(top-k set of q)``."""
        return float(bound.p[top_k_tokens(bound.q, bound.k)].sum())
