"""rrs_wor: recursive rejection sampling with candidates drawn without replacement.

(MCSD "without replacement"; RSD-C; EAGLE-1.) As rrs, with the WOR proposal ``q_i`` (q with
``x_1..x_{i-1}`` removed, renormalised over the undrawn tokens) in place of q, both in the ratio
``min(1, r_i(x_i)/q_i(x_i))`` and in the residual ``r_{i+1} = norm((r_i - q_i)+)``. Exact.
Acceptance: exact enumeration of WOR tuples (no closed form: the residual depends on the drawn set).
"""

from __future__ import annotations

from resispec.rows import Array, namespace, zero_at_
from resispec.verifiers.base import BatchedSequentialVerifier, RowStepGenerator
from resispec.verifiers.rejection import rejection_acceptance, rejection_residual


class RRSWithoutReplacement(BatchedSequentialVerifier):
    """Recursive rejection sampling over WOR draws, with the masked proposals q_i. Exact."""

    name = "rrs_wor"
    drafting = "wor"
    claims_exact = True
    single_candidate_is_sps = True
    k_independent = True
    drafts_rounds = True
    colour = "tab:orange"
    marker = "s"

    def _row_steps(self, p: Array, q: Array, candidates: Array, plan: None) -> RowStepGenerator:
        xp = namespace(p, q)
        target, undrawn = p, xp.asarray(q, copy=True)
        for i in range(candidates.shape[1]):
            proposal = undrawn / xp.sum(undrawn, axis=-1, keepdims=True)  # the undrawn mass, summed directly
            yield rejection_acceptance(target, proposal, candidates[:, i])
            target = rejection_residual(target, proposal)
            zero_at_(undrawn, candidates[:, i])
        return target
