"""Sequence-level verification of a whole drafted round in the decoding loop: ``block`` (chains) and
``traversal`` / ``traversal_wor`` (trees), by the NumPy reference of ``resispec.sequence``.

The loop drafts the tree with the drafting rule the verifier names (i.i.d. children as rrs draws them,
without replacement as rrs_wor does), scores it with the target, then hands the round to this module:
``(tree, tokens, p at every node, q at the internal nodes, rng) -> (node, token)``, the accepted path's
last node and the token emitted after it. One round is a few O(V) passes per node (float64 NumPy);
p and q cross from the device once per round.

Child slots that only pad a node whose processed draft has fewer tokens than the branching
(``resispec.engine.verifiers.node_verification``) repeat an earlier child; without replacement that token's draft mass
is
gone once the earlier child fails, so the padding gets weight 0 and is never accepted.
"""

from __future__ import annotations

import numpy as np
import torch

from resispec.engine.runtime.tree import CandidateTree
from resispec.sequence import SEQUENCE_VERIFIERS, get_round_verifier
from resispec.sequence.tree import round_tree
from resispec.verifiers import VERIFIERS


def drafting_verifier(drafting: str) -> str:
    """The zoo verifier whose drafting rule drafts a round's tree for a sequence-level ``drafting`` (the class
    that declares ``drafts_rounds``: rrs for i.i.d. trees, rrs_wor for WOR ones)."""
    return next(name for name, cls in VERIFIERS.items() if cls.drafts_rounds and cls.drafting == drafting)


def is_sequence_level(name: str) -> bool:
    """Whether ``name`` is a sequence-level (round) verifier rather than a node-by-node one."""
    return name in SEQUENCE_VERIFIERS


class RoundVerification:
    """A sequence-level verifier applied to the decoding loop's rounds."""

    def __init__(self, name: str) -> None:
        self.verifier = get_round_verifier(name)
        self.name = name

    def __call__(self, tree: CandidateTree, tokens: torch.Tensor, p: torch.Tensor, q: torch.Tensor,
                 rng: np.random.Generator) -> tuple[int, int]:
        """``(node, token)`` for one round: p (N, V) at every node, q (I, V) at the internal nodes."""
        drafted = round_tree(tree.parents.numpy(), tokens.cpu().numpy(), p.shape[-1])
        u = rng.random(self.verifier.uniforms_needed(drafted))
        return self.verifier.verify(drafted, p.cpu().numpy(), q.cpu().numpy(), u)
