"""rrs_skip_dup: rrs with i.i.d. candidates that skips a repeat of an earlier rejected one. BIASED.

Known-biased negative control. As rrs, except that a candidate equal to an earlier rejected one is
rejected outright and the residual is NOT updated (``a = 0``, ``r_{i+1} = r_i``). rrs's exactness
needs every step, the duplicate's included, to pass the rejected mass on as ``norm((r_i - q)+)``;
continuing from ``r_i`` instead over-weights it, so the output law drifts from p.
Acceptance: exact enumeration.
"""

from __future__ import annotations

import numpy as np

from resispec.verifiers.base import BoundVerifier, SequentialVerifier, StepGenerator
from resispec.verifiers.rejection import rejection_step


class RRSSkipDuplicates(SequentialVerifier):
    """rrs that skips repeated rejected candidates; a known-biased control."""

    name = "rrs_skip_dup"
    drafting = "iid"
    claims_exact = False

    def _steps(self, bound: BoundVerifier, candidates: np.ndarray) -> StepGenerator:
        target, rejected = bound.p, set()
        for candidate in candidates:
            if candidate in rejected:
                yield 0.0
                continue
            acceptance, next_target = rejection_step(target, bound.q, candidate)
            yield acceptance
            rejected.add(int(candidate))
            target = next_target
        return target
