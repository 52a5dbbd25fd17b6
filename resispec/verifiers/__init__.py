"""The verifier zoo: exact verifiers and the known-biased controls (the audits must flag each)."""

from __future__ import annotations

from resispec.verifiers.base import BoundVerifier, SequentialVerifier, Verifier
from resispec.verifiers.ears import EARS
from resispec.verifiers.partial_resolution import PartialResolution, PartialResolutionUnpooled
from resispec.verifiers.pooled import Pooled
from resispec.verifiers.pooled_wor import PooledWithoutReplacement
from resispec.verifiers.resispec import ResiSpec
from resispec.verifiers.resispec_paper import ResiSpecPaper
from resispec.verifiers.resispec_wor import ResiSpecWithoutReplacement
from resispec.verifiers.rrs import RRS
from resispec.verifiers.rrs_skip_dup import RRSSkipDuplicates
from resispec.verifiers.rrs_wor import RRSWithoutReplacement
from resispec.verifiers.spectr import SpecTr
from resispec.verifiers.sps import SPS
from resispec.verifiers.topk import TopK
from resispec.verifiers.wor_unmasked import WORUnmasked

VERIFIERS: dict[str, type[Verifier]] = {
    cls.name: cls
    for cls in (SPS, RRS, RRSWithoutReplacement, SpecTr, TopK, ResiSpec, Pooled, ResiSpecWithoutReplacement,
                PooledWithoutReplacement, PartialResolution,
                ResiSpecPaper, RRSSkipDuplicates, WORUnmasked, EARS, PartialResolutionUnpooled)
}
"""Every verifier class by name: exact ones first, then the known-biased controls."""


def get_verifier(name: str) -> Verifier:
    """A verifier instance by name; ``ValueError`` listing the known names otherwise."""
    try:
        return VERIFIERS[name]()
    except KeyError:
        raise ValueError(f"unknown verifier {name!r}; known: {', '.join(VERIFIERS)}") from None


__all__ = ["VERIFIERS", "BoundVerifier", "SequentialVerifier", "Verifier", "get_verifier"]
