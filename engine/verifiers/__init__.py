"""The verifier zoo in torch, batched over nodes: ``TORCH_VERIFIERS`` and ``get_torch_verifier``.

A core verifier whose rule is written once over rows (``resispec.verifiers.base.BatchedSequentialVerifier``:
sps, rrs, rrs_wor, spectr, topk, resispec, resispec_wor and the controls rrs_skip_dup, wor_unmasked, ears,
resispec_paper; ``resispec.verifiers.select_then_verify.SelectThenVerify``: pooled, pooled_wor) runs here
through ``shared_rule``, with no torch copy of its rule: every verifier of the zoo.
"""

from __future__ import annotations

from engine.verifiers.base import SequentialTorchVerifier, TorchVerifier
from engine.verifiers.shared_rule import torch_verifier_for
from resispec.verifiers import VERIFIERS

TORCH_VERIFIERS: dict[str, type[TorchVerifier]] = {name: torch_verifier_for(cls) for name, cls in VERIFIERS.items()}
"""Every torch verifier by the name of its core verifier, in ``VERIFIERS``' order: exact ones first, then
the controls."""


def get_torch_verifier(name: str) -> TorchVerifier:
    """A torch verifier instance by name; ``ValueError`` listing the known names otherwise."""
    try:
        return TORCH_VERIFIERS[name]()
    except KeyError:
        raise ValueError(f"unknown torch verifier {name!r}; known: {', '.join(TORCH_VERIFIERS)}") from None


__all__ = ["TORCH_VERIFIERS", "SequentialTorchVerifier", "TorchVerifier", "get_torch_verifier"]
