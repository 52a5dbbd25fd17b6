"""wor_unmasked: WOR candidates verified with the unmasked q (rrs rules on WOR draws). BIASED.

Known-biased negative control. Candidates are drawn without replacement, but every step uses the
original q: accept with ``min(1, r_i(x_i)/q(x_i))``, residual ``norm((r_i - q)+)``. The true
proposal of candidate i is the masked ``q_i``, so the accepted mass is wrong.
Acceptance: exact enumeration.
"""

from __future__ import annotations

import numpy as np

from resispec.verifiers.base import BoundVerifier, SequentialVerifier, StepGenerator
from resispec.verifiers.rejection import rejection_step


class WORUnmasked(SequentialVerifier):
    """rrs rules applied to WOR draws; a known-biased control."""

    name = "wor_unmasked"
    drafting = "wor"
    claims_exact = False

    def _steps(self, bound: BoundVerifier, candidates: np.ndarray) -> StepGenerator:
        target = bound.p
        for candidate in candidates:
            acceptance, target = rejection_step(target, bound.q, candidate)
            yield acceptance
        return target
