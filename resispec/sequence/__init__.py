"""Round-level (sequence-level) verification of a whole drafted tree: block and traversal
verification, token-level tree verification with any zoo verifier, and their exact round laws."""

from __future__ import annotations

from resispec.sequence.base import RoundVerifier
from resispec.sequence.block import Block, BlockNaive
from resispec.sequence.gbv import GBV, GBVNaive
from resispec.sequence.lifted import Lifted, TraversalResiSpec, TraversalResiSpecWOR
from resispec.sequence.token_level import TokenLevel
from resispec.sequence.traversal import Traversal, TraversalWOR
from resispec.sequence.tree import RoundLaw, RoundTree, round_tree
from resispec.verifiers import VERIFIERS

SEQUENCE_VERIFIERS: dict[str, type[RoundVerifier]] = {
    cls.name: cls for cls in (Block, Traversal, TraversalWOR, TraversalResiSpec, TraversalResiSpecWOR, GBV, BlockNaive,
                              GBVNaive)
}
"""The sequence-level verifiers by name: exact ones first, then the controls."""


def get_round_verifier(name: str) -> RoundVerifier:
    """A sequence-level verifier, or a zoo verifier applied node by node (``TokenLevel``), by name."""
    if name in SEQUENCE_VERIFIERS:
        return SEQUENCE_VERIFIERS[name]()
    if name in VERIFIERS:
        return TokenLevel(name)
    raise ValueError(f"unknown verifier {name!r}; known: {', '.join([*VERIFIERS, *SEQUENCE_VERIFIERS])}")


__all__ = ["GBV", "SEQUENCE_VERIFIERS", "Block", "BlockNaive", "GBVNaive", "Lifted", "RoundLaw", "RoundTree",
           "RoundVerifier", "TokenLevel", "Traversal", "TraversalResiSpec", "TraversalResiSpecWOR", "TraversalWOR",
           "get_round_verifier", "round_tree"]
