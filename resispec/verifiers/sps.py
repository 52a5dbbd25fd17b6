"""sps: single-draft speculative sampling (Leviathan et al. 2023; Chen et al. 2023).

Accept ``x ~ q`` with probability ``min(1, p(x)/q(x))``, else emit from ``norm((p - q)+)``.
Exact: ``min(p, q) + (p - q)+ = p``. Acceptance ``sum_x min(p, q) = 1 - TV(p, q)``.
It is rrs with exactly one candidate.
"""

from __future__ import annotations

from resispec.verifiers.rrs import RRS


class SPS(RRS):
    """Single-draft speculative sampling; takes exactly one candidate. Exact."""

    name = "sps"
    max_k = 1
    closed_form = drafts_rounds = False  # facts of rrs not inherited: not simulated, drafts no rounds
    colour = None
