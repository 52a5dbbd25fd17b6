"""Verification in the engine: the torch adapter of the core rules, node and round verification, the strategy.

- ``base.TorchVerifier(rule)``: one adapter that runs any core rule written over rows on (B, V) tensors
  (every verifier of the zoo: ``get_torch_verifier(name)``).
- ``node_verification.NodeVerifier``: drafting and verifying the children of tree nodes.
- ``round_verification.RoundVerification``: a sequence-level verifier applied to whole rounds.
- ``strategy.Verification``: how a decode verifies, resolved once from the request's verifier name.
"""

from __future__ import annotations

from resispec.engine.verifiers.base import TorchVerifier
from resispec.verifiers import get_verifier


def get_torch_verifier(name: str) -> TorchVerifier:
    """The torch verifier of the zoo verifier ``name``; ``ValueError`` listing the known names otherwise."""
    return TorchVerifier(get_verifier(name))


__all__ = ["TorchVerifier", "get_torch_verifier"]
