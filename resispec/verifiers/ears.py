"""ears: EARS-style relaxed acceptance on rrs (lossy by design). BIASED.

Known-biased negative control. As rrs, but candidate i is accepted iff
``u < min(1, r_i(x)/q(x) + tau (1 - max r_i))`` with ``tau = 0.1`` (``r_1 = p``): extra acceptance
where the current target is uncertain. The residual is rrs's ``norm((r_i - q)+)``, so the extra
accepted mass is never paid back. Acceptance: exact enumeration.
"""

from __future__ import annotations

from resispec.rows import Array, namespace
from resispec.verifiers.base import BatchedSequentialVerifier, RowStepGenerator
from resispec.verifiers.rejection import rejection_acceptance, rejection_residual

TAU = 0.1


class EARS(BatchedSequentialVerifier):
    """Relaxed-acceptance rrs; a known-biased control."""

    name = "ears"
    drafting = "iid"
    claims_exact = False

    def _row_steps(self, p: Array, q: Array, candidates: Array, plan: None) -> RowStepGenerator:
        xp = namespace(p, q)
        target = p
        for i in range(candidates.shape[1]):
            slack = TAU * (1.0 - xp.max(target, axis=-1))
            yield rejection_acceptance(target, q, candidates[:, i], slack)
            target = rejection_residual(target, q)
        return target
