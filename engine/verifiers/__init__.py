"""Torch ports of the verifier zoo, batched over nodes: ``TORCH_VERIFIERS`` and ``get_torch_verifier``.

One module per verifier, each the port of the NumPy verifier of the same name (its ``numpy_twin``),
beside the ported helpers they share (validation, sampling, drafting, rejection step, ratio profile,
schedule, bracketing). Adding a port is one module defining a ``TorchVerifier`` with its
``numpy_twin``, plus its class in ``_PORTS``.
"""

from __future__ import annotations

from engine.verifiers.base import SequentialTorchVerifier, TorchVerifier
from engine.verifiers.ears import TorchEARS
from engine.verifiers.pooled import TorchPooled
from engine.verifiers.pooled_wor import TorchPooledWithoutReplacement
from engine.verifiers.resispec import TorchResiSpec
from engine.verifiers.resispec_paper import TorchResiSpecPaper
from engine.verifiers.resispec_wor import TorchResiSpecWithoutReplacement
from engine.verifiers.rrs import TorchRRS
from engine.verifiers.rrs_skip_dup import TorchRRSSkipDuplicates
from engine.verifiers.rrs_wor import TorchRRSWithoutReplacement
from engine.verifiers.spectr import TorchSpecTr
from engine.verifiers.sps import TorchSPS
from engine.verifiers.topk import TorchTopK
from engine.verifiers.wor_unmasked import TorchWORUnmasked

_PORTS: tuple[type[TorchVerifier], ...] = (
    TorchSPS, TorchRRS, TorchRRSWithoutReplacement, TorchSpecTr, TorchTopK, TorchResiSpec, TorchPooled,
    TorchResiSpecWithoutReplacement, TorchPooledWithoutReplacement, TorchResiSpecPaper, TorchRRSSkipDuplicates,
    TorchWORUnmasked, TorchEARS,
)

TORCH_VERIFIERS: dict[str, type[TorchVerifier]] = {cls.name: cls for cls in _PORTS}
"""Every torch port by the name of its NumPy twin: exact verifiers first, then the controls."""


def get_torch_verifier(name: str) -> TorchVerifier:
    """A torch verifier instance by name; ``ValueError`` listing the known names otherwise."""
    try:
        return TORCH_VERIFIERS[name]()
    except KeyError:
        raise ValueError(f"unknown torch verifier {name!r}; known: {', '.join(TORCH_VERIFIERS)}") from None


__all__ = ["TORCH_VERIFIERS", "SequentialTorchVerifier", "TorchVerifier", "get_torch_verifier"]
