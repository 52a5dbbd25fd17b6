"""The round-verifier contract: one decision for a whole drafted tree.

A round verifier sees the drafted tree (``resispec.sequence.tree``), the target ``p`` at every node
and the draft ``q`` at every internal node, and returns the outcome ``(node, token)``: the accepted
path ends at ``node`` and ``token`` is emitted after it. It is *exact* when, for every pair of
autoregressive models, the emitted sequence (accepted tokens, then the emitted one), continued by
target sampling, is distributed as the target's sequential law (audited by
``resispec.audit.round_law.exact_round_law``).

Randomness: ``verify`` consumes ``uniforms_needed(tree)`` uniforms in ``[0, 1)`` (layout documented
by each verifier); ``law`` is the exact conditional law given the tree, the uniforms integrated out.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from resispec.drafting import DRAFTING_SCHEMES, DraftingScheme
from resispec.sequence.tree import RoundLaw, RoundTree, round_arrays
from resispec.validation import as_uniforms


class RoundVerifier(ABC):
    """Class attributes: ``name``; ``drafting`` (the children's drafting rule: ``"iid"``, ``"wor"`` or
    ``"topk"``); ``claims_exact``; ``chains_only`` (True: every node has at most one child)."""

    name: ClassVar[str]
    drafting: ClassVar[str]
    claims_exact: ClassVar[bool]
    chains_only: ClassVar[bool] = False

    @property
    def scheme(self) -> DraftingScheme:
        return DRAFTING_SCHEMES[self.drafting]

    def check_tree(self, tree: RoundTree) -> None:
        """``ValueError`` if this verifier cannot take the tree's shape."""
        if self.chains_only and not tree.is_chain:
            raise ValueError(f"tree: {self.name} verifies a chain (one child per node); "
                             f"this tree has a node with {max(len(c) for c in tree.children)} children")

    @abstractmethod
    def uniforms_needed(self, tree: RoundTree) -> int:
        """How many uniforms one ``verify`` of ``tree`` consumes."""

    def verify(self, tree: RoundTree, p: np.ndarray, q: np.ndarray, u: np.ndarray) -> tuple[int, int]:
        """``(node, token)``: the accepted path ends at ``node``, then ``token`` is emitted."""
        self.check_tree(tree)
        p, q = round_arrays(tree, p, q)
        return self._decide(tree, p, q, as_uniforms(u, self.uniforms_needed(tree)))

    def law(self, tree: RoundTree, p: np.ndarray, q: np.ndarray) -> RoundLaw:
        """The exact law of ``(node, token)`` given the tree."""
        self.check_tree(tree)
        p, q = round_arrays(tree, p, q)
        return self._law(tree, p, q)

    @abstractmethod
    def _decide(self, tree: RoundTree, p: np.ndarray, q: np.ndarray, u: np.ndarray) -> tuple[int, int]:
        """``verify`` on validated inputs."""

    @abstractmethod
    def _law(self, tree: RoundTree, p: np.ndarray, q: np.ndarray) -> RoundLaw:
        """``law`` on validated inputs."""
