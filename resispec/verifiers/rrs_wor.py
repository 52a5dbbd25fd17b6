"""rrs_wor: recursive rejection sampling with candidates drawn without replacement.

(MCSD "without replacement"; RSD-C; EAGLE-1.) As rrs, with the WOR proposal ``q_i`` (q with
``x_1..x_{i-1}`` removed, renormalised over the undrawn tokens) in place of q, both in the ratio
``min(1, r_i(x_i)/q_i(x_i))`` and in the residual ``r_{i+1} = norm((r_i - q_i)+)``. Exact.
Acceptance: exact enumeration of WOR tuples (no closed form: the residual depends on the drawn set).
"""

from __future__ import annotations

import numpy as np

from resispec.verifiers.base import BoundVerifier, SequentialVerifier, StepGenerator
from resispec.verifiers.rejection import rejection_step


class RRSWithoutReplacement(SequentialVerifier):
    """Recursive rejection sampling over WOR draws, with the masked proposals q_i. Exact."""

    name = "rrs_wor"
    drafting = "wor"
    claims_exact = True
    single_candidate_is_sps = True

    def _steps(self, bound: BoundVerifier, candidates: np.ndarray) -> StepGenerator:
        target, undrawn = bound.p, bound.q.copy()
        for candidate in candidates:
            proposal = undrawn / undrawn.sum()
            acceptance, target = rejection_step(target, proposal, candidate)
            yield acceptance
            undrawn[candidate] = 0.0
        return target
