"""rrs: recursive rejection sampling with i.i.d. candidates (SpecInfer; MCSD "with replacement").

``r_1 = p``. Step i accepts ``x_i`` with probability ``min(1, r_i(x_i)/q(x_i))``; on rejection
``r_{i+1} = norm((r_i - q)+)``; all rejected: emit from ``r_{k+1}``. Exact (each step is single-draft
speculative sampling against the current residual, and the next candidate is independent of the
rejection). Residual drift: ``r_2`` lives where ``p > q``, where q rarely samples.
Acceptance (closed form): ``1 - prod_i (1 - beta_i)``, ``beta_i = sum_x min(r_i(x), q(x))``.
"""

from __future__ import annotations

import numpy as np

from resispec.rows import Array
from resispec.verifiers.base import BatchedSequentialVerifier, BoundVerifier, RowStepGenerator
from resispec.verifiers.rejection import rejection_acceptance, rejection_residual


class RRS(BatchedSequentialVerifier):
    """Recursive rejection sampling over i.i.d. draws from q. Exact."""

    name = "rrs"
    drafting = "iid"
    claims_exact = True
    single_candidate_is_sps = True
    closed_form = True
    k_independent = True
    drafts_rounds = True
    colour = "tab:blue"

    def _row_steps(self, p: Array, q: Array, candidates: Array, plan: None) -> RowStepGenerator:
        target = p
        for i in range(candidates.shape[1]):
            yield rejection_acceptance(target, q, candidates[:, i])
            target = rejection_residual(target, q)
        return target

    def _acceptance(self, bound: BoundVerifier) -> float:
        """Closed form ``1 - prod_i (1 - sum_x min(r_i, q))`` with the candidate-free residuals r_i."""
        target, all_rejected = bound.p, 1.0
        for _ in range(bound.k):
            overlap = np.minimum(target, bound.q).sum()
            all_rejected *= max(1.0 - overlap, 0.0)
            residual = np.maximum(target - bound.q, 0.0)
            if all_rejected == 0.0 or not residual.sum() > 0:
                return 1.0
            target = residual / residual.sum()
        return 1.0 - all_rejected
