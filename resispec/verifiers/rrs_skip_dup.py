"""rrs_skip_dup: rrs with i.i.d. candidates that skips a repeat of an earlier rejected one. BIASED.

Known-biased negative control. As rrs, except that a candidate equal to an earlier rejected one is
rejected outright and the residual is NOT updated (``a = 0``, ``r_{i+1} = r_i``). rrs's exactness
needs every step, the duplicate's included, to pass the rejected mass on as ``norm((r_i - q)+)``;
continuing from ``r_i`` instead over-weights it, so the output law drifts from p.
Acceptance: exact enumeration.
"""

from __future__ import annotations

from resispec.rows import Array, namespace
from resispec.verifiers.base import BatchedSequentialVerifier, RowStepGenerator
from resispec.verifiers.rejection import rejection_acceptance, rejection_residual


class RRSSkipDuplicates(BatchedSequentialVerifier):
    """rrs that skips repeated rejected candidates; a known-biased control."""

    name = "rrs_skip_dup"
    drafting = "iid"
    claims_exact = False

    def _row_steps(self, p: Array, q: Array, candidates: Array, plan: None) -> RowStepGenerator:
        """A row still verifying at step i rejected every earlier candidate, so "earlier rejected" is "earlier"."""
        xp = namespace(p, q)
        target = p
        for i in range(candidates.shape[1]):
            repeat = xp.any(candidates[:, :i] == candidates[:, i:i + 1], axis=-1)
            yield xp.where(repeat, 0.0, rejection_acceptance(target, q, candidates[:, i]))
            target = xp.where(repeat[:, None], target, rejection_residual(target, q))
        return target
