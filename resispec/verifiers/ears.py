"""ears: EARS-style relaxed acceptance on rrs (lossy by design). BIASED.

Known-biased negative control. As rrs, but candidate i is accepted iff
``u < min(1, r_i(x)/q(x) + tau (1 - max r_i))`` with ``tau = 0.1`` (``r_1 = p``): extra acceptance
where the current target is uncertain. The residual is rrs's ``norm((r_i - q)+)``, so the extra
accepted mass is never paid back. Acceptance: exact enumeration.
"""

from __future__ import annotations

import numpy as np

from resispec.verifiers.base import BoundVerifier, SequentialVerifier, StepGenerator
from resispec.verifiers.rejection import rejection_step

TAU = 0.1


class EARS(SequentialVerifier):
    """Relaxed-acceptance rrs; a known-biased control."""

    name = "ears"
    drafting = "iid"
    claims_exact = False

    def _steps(self, bound: BoundVerifier, candidates: np.ndarray) -> StepGenerator:
        target = bound.p
        for candidate in candidates:
            slack = TAU * (1.0 - float(target.max()))
            acceptance, target = rejection_step(target, bound.q, candidate, slack)
            yield acceptance
        return target
