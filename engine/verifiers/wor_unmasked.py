"""Torch port of ``resispec.verifiers.wor_unmasked.WORUnmasked``: rrs rules on WOR draws. BIASED.

Known-biased negative control: candidates drawn without replacement, but every step uses the
unmasked q: accept with ``min(1, r_i(x_i)/q(x_i))``, residual ``norm((r_i - q)+)``. The true proposal
of candidate i is the masked ``q_i``, so the accepted mass is wrong. Shapes: p, q (B, V); candidates
(B, k).
"""

from __future__ import annotations

from engine.verifiers.rrs import TorchRRS
from resispec.verifiers.wor_unmasked import WORUnmasked


class TorchWORUnmasked(TorchRRS):
    """rrs rules applied to WOR draws; a known-biased control."""

    numpy_twin = WORUnmasked
