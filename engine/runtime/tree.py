"""Candidate trees: the static shape of a speculation tree and the attention pattern for scoring it.

Node 0 is the root: the last accepted token (its next-token distribution is the one the depth-1 candidates
are drawn from). Nodes are numbered level by level (breadth first); the children of a node are contiguous
and ordered like their parents, so level ``d`` is the slice ``tree.level(d)`` and a node's parent always
has a smaller index. A node at depth ``d`` sits at sequence position ``prefix_len + d``, where
``prefix_len`` is the number of accepted tokens before the root.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from resispec.limits import check_tree_size


def node_depths(parents: Sequence[int]) -> list[int]:
    """Depth of every node (root = 0) from `parents` (length N, -1 for a root, ``parents[i] < i``)."""
    depths: list[int] = []
    for index, parent in enumerate(parents):
        if not -1 <= parent < index:
            raise ValueError(f"parents[{index}] = {parent}: a parent must be -1 or an earlier node")
        depths.append(0 if parent < 0 else depths[parent] + 1)
    return depths


def ancestor_matrix(parents: Sequence[int]) -> torch.Tensor:
    """Bool tensor [N, N]: entry (i, j) is True iff node j is node i or one of its ancestors.

    Row i is the set of tree nodes that node i attends to. `parents` as in `node_depths`.
    """
    node_depths(parents)  # validates the parent links
    ancestors = torch.eye(len(parents), dtype=torch.bool)
    for index, parent in enumerate(parents):
        if parent >= 0:
            ancestors[index] |= ancestors[parent]
    return ancestors


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The 4D additive attention mask [1, 1, Q, K] of `dtype` for a bool `allowed` [Q, K].

    0 where query q may attend to key k, the most negative finite value of `dtype` elsewhere (the form
    transformers passes through unchanged to both the eager and the sdpa attention).
    """
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[None, None]


@dataclass(frozen=True)
class CandidateTree:
    """A tree with fixed branching per depth: ``branching[d]`` children for every node at depth d.

    Attributes:
        branching: children per node at depth 0, 1, ..., D-1 (D = the depth of the leaves).
        parents: long tensor [N], parent node of each node; -1 for the root (node 0).
        depths: long tensor [N], depth of each node (root = 0).
    """

    branching: tuple[int, ...]
    parents: torch.Tensor
    depths: torch.Tensor

    @classmethod
    def from_branching(cls, branching: Sequence[int]) -> CandidateTree:
        """The tree with ``branching[d]`` children per depth-d node, e.g. (4, 2, 2, 1): 1+4+8+16+16 nodes."""
        branching = tuple(int(b) for b in branching)
        check_tree_size(branching, "branching")  # >= 1 at every depth, at most MAX_TREE_NODES nodes
        parents = [-1]
        level_start, level_size = 0, 1
        for children in branching:
            for parent in range(level_start, level_start + level_size):
                parents.extend([parent] * children)
            level_start, level_size = level_start + level_size, level_size * children
        return cls(
            branching=branching,
            parents=torch.tensor(parents, dtype=torch.long),
            depths=torch.tensor(node_depths(parents), dtype=torch.long),
        )

    @property
    def num_nodes(self) -> int:
        """N, the number of nodes including the root."""
        return len(self.parents)

    @property
    def depth(self) -> int:
        """D, the depth of the leaves (0 for a root-only tree)."""
        return len(self.branching)

    def level(self, depth: int) -> slice:
        """The node indices at `depth` (0..D), a contiguous slice."""
        if not 0 <= depth <= self.depth:
            raise ValueError(f"depth must be in [0, {self.depth}], got {depth}")
        start = sum(math.prod(self.branching[:d]) for d in range(depth))
        return slice(start, start + math.prod(self.branching[:depth]))

    def children(self, node: int) -> slice:
        """The node indices of `node`'s children, a contiguous slice (empty for a leaf)."""
        depth = int(self.depths[node])
        if depth == self.depth:
            return slice(node, node)
        count = self.branching[depth]
        start = self.level(depth + 1).start + (node - self.level(depth).start) * count
        return slice(start, start + count)

    def path(self, node: int) -> list[int]:
        """Node indices from the root down to `node`, both included."""
        parents = self.parents.tolist()
        path = [node]
        while parents[path[-1]] >= 0:
            path.append(parents[path[-1]])
        return path[::-1]

    def ancestors(self) -> torch.Tensor:
        """Bool tensor [N, N], see `ancestor_matrix`: the tree attention pattern among the nodes."""
        return ancestor_matrix(self.parents.tolist())
