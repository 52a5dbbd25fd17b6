"""Drafting and verifying the children of one tree node with a verifier of the zoo.

The decoding loop asks two things of a verifier: draw each internal node's children from q by the
verifier's drafting rule, and verify one node's children against p. Drafting without replacement or
top-k needs ``k <= support(q)``; after top-k/top-p processing a node may have fewer draft tokens than
the tree's branching, so such a node gets ``support`` real children and the remaining child slots
repeat the last one as padding, which verification never sees (``real_children``).
"""

from __future__ import annotations

import numpy as np
import torch

from resispec import get_verifier
from resispec.verifiers.base import Verifier


class NodeVerifier:
    """A verifier of the zoo applied node by node (NumPy reference; float64 probabilities)."""

    def __init__(self, name: str) -> None:
        self.verifier: Verifier = get_verifier(name)
        self.name = name

    def check_branching(self, branching: tuple[int, ...]) -> None:
        """Reject tree shapes the verifier cannot take (e.g. sps with more than one child)."""
        limit = self.verifier.max_k
        if limit is not None and max(branching) > limit:
            raise ValueError(f"tree: {self.name} verifies at most {limit} candidate(s) per node, "
                             f"but the branching is {','.join(map(str, branching))}")

    def real_children(self, q: np.ndarray, k: int) -> int:
        """How many of the k child slots hold real candidates (the rest are padding)."""
        limit = self.verifier.scheme.max_candidates(q)
        return k if limit is None else min(k, limit)

    def draft(self, q: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        """k child tokens of a node with draft q (shape (V,)); padded as described in the module doc."""
        real = self.real_children(q, k)
        children = self.verifier.draft(q, real, rng)
        return np.concatenate([children, np.repeat(children[-1:], k - real)])

    def draft_batch(self, q: torch.Tensor, k: int, rng: np.random.Generator) -> torch.Tensor:
        """Children of M nodes (q float64 [M, V]) -> long [M, k]."""
        rows = q.cpu().numpy()
        return torch.from_numpy(np.stack([self.draft(row, k, rng) for row in rows]))

    def verify(self, p: np.ndarray, q: np.ndarray, children: np.ndarray,
               rng: np.random.Generator) -> tuple[int, int]:
        """``(token, index)`` for one node; index is the accepted child slot or -1 (residual)."""
        candidates = children[: self.real_children(q, children.size)]
        return self.verifier.verify_rng(p, q, candidates, rng)
