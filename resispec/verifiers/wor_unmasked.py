"""wor_unmasked: WOR candidates verified with the unmasked q (rrs rules on WOR draws). BIASED.

Known-biased negative control. Candidates are drawn without replacement, but every step uses the
original q: accept with ``min(1, r_i(x_i)/q(x_i))``, residual ``norm((r_i - q)+)``. The true
proposal of candidate i is the masked ``q_i``, so the accepted mass is wrong.
Acceptance: exact enumeration (rrs's closed form holds for i.i.d. draws only).
"""

from __future__ import annotations

from resispec.enumeration import enumerate_law
from resispec.verifiers.base import BoundVerifier
from resispec.verifiers.rrs import RRS


class WORUnmasked(RRS):
    """rrs's steps applied to WOR draws; a known-biased control."""

    name = "wor_unmasked"
    drafting = "wor"
    claims_exact = False
    single_candidate_is_sps = False  # a control keeps its own rule everywhere
    closed_form = drafts_rounds = False  # facts of rrs not inherited: not simulated, drafts no rounds
    colour = None

    def _acceptance(self, bound: BoundVerifier) -> float:
        return enumerate_law(bound).acceptance
