"""A drafted round: the token tree, the target at every node, the draft at every internal node.

Numbering (the engine's): node 0 is the root (the last emitted token); a parent precedes its children,
siblings are in draw order, and the internal nodes (those with children) are numbered first, so row i
of the draft array belongs to node i. ``p[n]`` is the target's next-token law after the path to node
n; ``q[i]`` is the draft's law internal node i's children were drawn from.

The outcome of a round is ``(node, token)``: the path root -> ``node`` is accepted (``depth(node)``
draft tokens) and ``token`` is emitted after it. A round's conditional law given the tree is a
``RoundLaw``: ``P(node, token) = stop[node] * emission[node, token]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from resispec.validation import as_distribution_rows


@dataclass(frozen=True)
class RoundTree:
    """The shape and tokens of a drafted tree (validated by ``round_tree``)."""

    parents: np.ndarray
    tokens: np.ndarray

    @property
    def num_nodes(self) -> int:
        return int(self.parents.size)

    @cached_property
    def children(self) -> tuple[tuple[int, ...], ...]:
        """Each node's children in draw order."""
        lists: list[list[int]] = [[] for _ in range(self.num_nodes)]
        for node, parent in enumerate(self.parents.tolist()[1:], start=1):
            lists[parent].append(node)
        return tuple(tuple(c) for c in lists)

    @cached_property
    def depths(self) -> np.ndarray:
        depths = np.zeros(self.num_nodes, dtype=np.int64)
        for node in range(1, self.num_nodes):
            depths[node] = depths[self.parents[node]] + 1
        return depths

    @cached_property
    def num_internal(self) -> int:
        """I, the number of nodes with children (they are nodes 0..I-1)."""
        return sum(1 for c in self.children if c)

    @property
    def is_chain(self) -> bool:
        return all(len(c) <= 1 for c in self.children)

    def path(self, node: int) -> list[int]:
        """Nodes from the root down to ``node``, both included."""
        path = [node]
        while path[-1] > 0:
            path.append(int(self.parents[path[-1]]))
        return path[::-1]


def _integers(values: np.ndarray | list[int], name: str) -> np.ndarray:
    """``values`` as int64, refusing what is not integer-valued (a float parent 0.7 must not become 0)."""
    array = np.asarray(values)
    if array.size and not (np.issubdtype(array.dtype, np.integer) or (
            np.issubdtype(array.dtype, np.floating) and np.isfinite(array).all() and (array == np.round(array)).all())):
        raise ValueError(f"{name}: expected integer node indices / token ids, got {array.tolist()!r}")
    return array.astype(np.int64)


def round_tree(parents: np.ndarray | list[int], tokens: np.ndarray | list[int], vocab_size: int) -> RoundTree:
    """Validate a tree: ``parents[0] = -1``, ``0 <= parents[n] < n``, internal nodes first, token ids
    in ``[0, vocab_size)``, both integers (not booleans, not 0.7); ``ValueError`` naming the argument
    otherwise."""
    parents, tokens = _integers(parents, "parents"), _integers(tokens, "tokens")
    if parents.ndim != 1 or parents.size < 1 or parents[0] != -1:
        raise ValueError("parents: a non-empty 1-D array whose entry 0 (the root) is -1")
    if tokens.shape != parents.shape:
        raise ValueError(f"tokens: expected shape {parents.shape} (one per node), got {tokens.shape}")
    nodes = np.arange(parents.size)
    if ((parents[1:] < 0) | (parents[1:] >= nodes[1:])).any():
        raise ValueError("parents: every non-root node's parent must be an earlier node")
    if ((tokens < 0) | (tokens >= vocab_size)).any():
        raise ValueError(f"tokens: ids must lie in [0, {vocab_size})")
    tree = RoundTree(parents, tokens)
    internal = np.array([bool(c) for c in tree.children])
    if internal[tree.num_internal:].any():
        raise ValueError("parents: the internal nodes (those with children) must be numbered first")
    return tree


def round_arrays(tree: RoundTree, p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``p`` [N, V] and ``q`` [I, V] against ``tree`` (distributions, shapes, drafted tokens
    possible under q); return them as float64."""
    p = as_distribution_rows(p, "p (target)")
    q = as_distribution_rows(q, "q (draft)")
    if p.shape[0] != tree.num_nodes:
        raise ValueError(f"p (target): expected {tree.num_nodes} rows (one per node), got {p.shape[0]}")
    if q.shape != (tree.num_internal, p.shape[1]):
        raise ValueError(f"q (draft): expected shape {(tree.num_internal, p.shape[1])} (one row per "
                         f"internal node), got {q.shape}")
    if (tree.tokens >= p.shape[1]).any():
        node = int(np.flatnonzero(tree.tokens >= p.shape[1])[0])
        raise ValueError(f"tokens: node {node}'s token {tree.tokens[node]} is outside p's vocabulary [0, {p.shape[1]})")
    for node in range(1, tree.num_nodes):
        if q[tree.parents[node], tree.tokens[node]] <= 0:
            raise ValueError(f"tokens: node {node}'s token {tree.tokens[node]} has q = 0 at its parent")
    return p, q


@dataclass(frozen=True)
class RoundLaw:
    """The exact law of a round's outcome given the tree: ``joint[n, y] = stop[n] * emission[n, y]``."""

    stop: np.ndarray
    emission: np.ndarray

    @property
    def joint(self) -> np.ndarray:
        return self.stop[:, None] * self.emission

    def expected_accepted(self, tree: RoundTree) -> float:
        """E[accepted draft tokens] = sum_n stop[n] depth(n)."""
        return float(self.stop @ tree.depths)
