"""How a decode verifies, resolved once from the request's verifier name: ``Verification.of(name)``.

A node-by-node verifier of the zoo drafts each node's children by its drafting rule and verifies them
node by node (``NodeVerifier``); where its one-candidate rule is sps, the tree's chain prefix is verified
as sps (nodes batched). A sequence-level verifier (``block``, ``traversal``, ``traversal_wor``) decides
whole rounds (``RoundVerification``); its trees are drafted by the zoo verifier whose class declares
``drafts_rounds`` for its drafting rule (rrs for i.i.d. children, rrs_wor without replacement).

A name whose law a faster rule of the zoo reproduces decision for decision runs that rule
(``SAME_DECISIONS_FASTER``): ``pooled`` runs ``partial_resolution``, pooled's selection with only the drawn
candidates' pools resolved (the same uniforms give the same tokens; docs/verifiers/partial_resolution.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from resispec.engine.verifiers.node_verification import NodeVerifier
from resispec.engine.verifiers.round_verification import RoundVerification, drafting_verifier, is_sequence_level
from resispec.verifiers import Verifier, get_verifier

SAME_DECISIONS_FASTER = {"pooled": "partial_resolution"}
"""Request name -> the rule the engine runs for it: the same decisions from the same uniforms, at less cost
(partial_resolution against pooled: 1.1x faster batched on torch at B = 64, V = 49152, k = 4; 1.4-2.1x per
NumPy row, k = 2..8; docs/verifiers/partial_resolution.md)."""


@dataclass(frozen=True)
class Verification:
    """The verification of one decode. ``node``: the zoo verifier that drafts the children (and verifies them,
    node by node, when ``round`` is None); ``round``: the sequence-level verifier, or None."""

    name: str
    node: Verifier
    round: RoundVerification | None = None

    @classmethod
    def of(cls, name: str) -> Verification:
        """The verification named ``name`` (a zoo verifier or a sequence-level one); ``ValueError`` otherwise."""
        if is_sequence_level(name):
            round_verification = RoundVerification(name)
            return cls(name, get_verifier(drafting_verifier(round_verification.verifier.drafting)), round_verification)
        return cls(name, get_verifier(SAME_DECISIONS_FASTER.get(name, name)))

    @property
    def chains_only(self) -> bool:
        """Whether it verifies chains only (block)."""
        return self.round is not None and self.round.verifier.chains_only

    def check_branching(self, branching: tuple[int, ...]) -> None:
        """``ValueError`` for a tree shape it cannot take (block: a chain; sps: one child per node)."""
        shape = ",".join(map(str, branching))
        if self.chains_only and max(branching) > 1:
            raise ValueError(f"tree: {self.name} verifies a chain (one child per node, e.g. 1,1,1,1), "
                             f"but the branching is {shape}")
        limit = self.node.max_k
        if limit is not None and max(branching) > limit:
            raise ValueError(f"tree: {self.name} verifies at most {limit} candidate(s) per node, "
                             f"but the branching is {shape}")

    def node_verifier(self, parity_fraction: float = 0.0,
                      parity_rng: np.random.Generator | None = None) -> NodeVerifier:
        """Drafting (and, node by node, verifying) the children of tree nodes."""
        return NodeVerifier(self.node, parity_fraction, parity_rng)

    def chain_verifier(self, parity_fraction: float = 0.0,
                       parity_rng: np.random.Generator | None = None) -> NodeVerifier | None:
        """sps for the tree's chain prefix where the node verifier's one-candidate rule is sps; else None."""
        if self.round is not None or not self.node.single_candidate_is_sps:
            return None
        return NodeVerifier(get_verifier("sps"), parity_fraction, parity_rng)
