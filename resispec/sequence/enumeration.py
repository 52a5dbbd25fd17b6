"""Every drafted tree of one round over small autoregressive models, with the target's continuations.

The models are functions ``prefix -> distribution`` (a tuple of token ids after the round's root ->
shape (V,)). The tree has ``branching[d]`` children per node at depth d, numbered breadth first (as
``resispec.engine.runtime.tree``); each internal node's children are drawn from q at its prefix by a drafting scheme.
Sequences of ``D + 1`` tokens are indexed big-endian (``s_1`` most significant).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from resispec.drafting import DraftingScheme
from resispec.limits import MAX_ROUND_SEQUENCES
from resispec.sequence.tree import RoundTree, round_tree
from resispec.validation import as_count, as_distribution

Conditional = Callable[[tuple[int, ...]], np.ndarray]
"""``prefix -> next-token distribution`` (shape (V,)); the prefix holds the ids after the root."""

MAX_TREES = 100_000
"""Default ceiling on the number of drafted trees one enumeration may visit."""


def dirichlet_conditional(vocab_size: int, seed: int, concentration: float = 1.0) -> Conditional:
    """A small random model: at each prefix a fresh ``Dirichlet(concentration)`` draw over ``vocab_size`` tokens,
    reproducible from ``(seed, prefix)`` (the models of the round-law audits and the round LP's instances)."""
    cache: dict[tuple[int, ...], np.ndarray] = {}

    def conditional(prefix: tuple[int, ...]) -> np.ndarray:
        if prefix not in cache:
            rng = np.random.default_rng([seed, len(prefix), *prefix])
            cache[prefix] = rng.dirichlet(np.full(vocab_size, concentration))
        return cache[prefix]

    return conditional


def branching_parents(branching: Sequence[int]) -> np.ndarray:
    """Parent links of the tree with ``branching[d]`` children per depth-d node, breadth first."""
    parents, level = [-1], [0]
    for k in branching:
        k = as_count(k, "branching", "children")
        children = []
        for parent in level:
            children.extend(range(len(parents), len(parents) + k))
            parents.extend([parent] * k)
        level = children
    return np.array(parents, dtype=np.int64)


@dataclass(frozen=True)
class DraftedRound:
    """One drafted tree: its probability under the drafting scheme, each node's prefix, p and q."""

    tree: RoundTree
    probability: float
    prefixes: list[tuple[int, ...]]
    p: np.ndarray
    q: np.ndarray


class RoundModels:
    """A target and a draft model, a tree shape, and the enumeration of its drafted trees."""

    def __init__(self, target: Conditional, draft: Conditional, vocab_size: int, branching: Sequence[int]) -> None:
        self.vocab_size = as_count(vocab_size, "vocab_size", "tokens")
        if isinstance(branching, (str, bytes)) or not isinstance(branching, Sequence) or not branching:
            raise ValueError(f"branching: expected a non-empty sequence of children per depth, got {branching!r}")
        self.parents = branching_parents(branching)
        self.depth = len(branching)
        sequences = self.vocab_size ** (self.depth + 1)
        if sequences > MAX_ROUND_SEQUENCES:
            raise ValueError(f"vocab_size, branching: V^(D+1) = {self.vocab_size}^{self.depth + 1} = {sequences} "
                             f"sequences, more than MAX_ROUND_SEQUENCES = {MAX_ROUND_SEQUENCES} (resispec.limits)")
        self.target = lru_cache(maxsize=None)(lambda prefix: self._law(target, prefix, "target"))
        self.draft = lru_cache(maxsize=None)(lambda prefix: self._law(draft, prefix, "draft"))
        self.target(()), self.draft(())
        self.continuation = lru_cache(maxsize=None)(self._continuation)
        self.next_then_target = lru_cache(maxsize=None)(self._next_then_target)

    def _law(self, model: Conditional, prefix: tuple[int, ...], name: str) -> np.ndarray:
        """``model(prefix)`` checked: a distribution over exactly ``vocab_size`` tokens at every prefix."""
        law = as_distribution(model(prefix), f"{name}({prefix})")
        if law.size != self.vocab_size:
            raise ValueError(f"{name}: the distribution at prefix {prefix} has {law.size} entries, not vocab_size "
                             f"{self.vocab_size} (a model's vocabulary must not change)")
        return law

    def _continuation(self, prefix: tuple[int, ...], length: int) -> np.ndarray:
        """The target's law of the next ``length`` tokens after ``prefix`` (flattened, big-endian)."""
        if length == 0:
            return np.ones(1)
        p = self.target(prefix)
        return np.concatenate([p[y] * self.continuation((*prefix, y), length - 1) for y in range(self.vocab_size)])

    def _next_then_target(self, prefix: tuple[int, ...]) -> np.ndarray:
        """Row y: the target's law of the tokens after ``prefix + (y,)`` up to length D + 1."""
        rest = self.depth - len(prefix)
        return np.stack([self.continuation((*prefix, y), rest) for y in range(self.vocab_size)])

    def target_law(self) -> np.ndarray:
        """The target's law of ``D + 1`` tokens (shape (V^(D+1),))."""
        return self.continuation((), self.depth + 1)

    def block(self, prefix: tuple[int, ...]) -> slice:
        """The sequences (indices) that start with ``prefix``."""
        size = self.vocab_size ** (self.depth + 1 - len(prefix))
        start = 0
        for token in prefix:
            start = start * self.vocab_size + token
        return slice(start * size, (start + 1) * size)

    def tree_count(self, scheme: DraftingScheme) -> int:
        """The number of trees if every internal node had the root's draft support (an estimate)."""
        sizes = np.bincount(self.parents[1:], minlength=self.parents.size)
        return math.prod(scheme.tuple_count(self.draft(()), int(k)) for k in sizes if k > 0)

    def rounds(self, scheme: DraftingScheme, max_trees: int = MAX_TREES) -> Iterator[DraftedRound]:
        """Every drafted tree of positive probability under ``scheme`` (refused past ``max_trees``)."""
        if self.tree_count(scheme) > max_trees:
            raise ValueError(f"branching: about {self.tree_count(scheme)} drafted trees to enumerate, more than "
                             f"max_trees = {max_trees}; use a smaller vocabulary or tree")
        parents = self.parents
        children = [np.flatnonzero(parents == node).tolist() for node in range(parents.size)]
        internal = [node for node in range(parents.size) if children[node]]

        def expand(position: int, tokens: list[int], prefixes: list[tuple[int, ...]], probability: float
                   ) -> Iterator[DraftedRound]:
            if position == len(internal):
                tree = round_tree(parents, tokens, self.vocab_size)
                p = np.stack([self.target(prefix) for prefix in prefixes])
                q = np.stack([self.draft(prefixes[n]) for n in range(tree.num_internal)])
                yield DraftedRound(tree, probability, list(prefixes), p, q)
                return
            node = internal[position]
            draft = self.draft(prefixes[node])
            limit = scheme.max_candidates(draft)
            if limit is not None and len(children[node]) > limit:  # the tuples would miss mass: never a wrong law
                raise ValueError(f"branching: {scheme.name} drafting of {len(children[node])} children at prefix "
                                 f"{prefixes[node]} needs at least that many tokens with q > 0, but only {limit} "
                                 "have; use a narrower tree")
            for drawn, chance in scheme.tuples(draft, len(children[node])):
                for child, token in zip(children[node], drawn):
                    tokens[child] = token
                    prefixes[child] = (*prefixes[node], token)
                yield from expand(position + 1, tokens, prefixes, probability * chance)

        yield from expand(0, [0] * parents.size, [()] * parents.size, 1.0)
