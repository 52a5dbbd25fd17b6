"""Torch port of ``resispec.verifiers.sps.SPS``: single-draft speculative sampling, batched.

Accept ``x ~ q`` with probability ``min(1, p(x)/q(x))``, else emit from ``norm((p - q)+)``
(Leviathan et al. 2023; Chen et al. 2023). Exact. It is rrs with exactly one candidate (k = 1).
"""

from __future__ import annotations

from engine.verifiers.rrs import TorchRRS
from resispec.verifiers.sps import SPS


class TorchSPS(TorchRRS):
    """Single-draft speculative sampling; takes exactly one candidate per node. Exact."""

    numpy_twin = SPS
