"""Sequence-level exact-law audit: one whole speculative round over small autoregressive models.

The models are functions ``prefix -> distribution`` (a tuple of token ids after the round's root ->
shape (V,)): the target ``p`` and the draft ``q``. The tree has ``branching[d]`` children per node at
depth d (numbered as in ``engine.tree``). The audit enumerates every drafted tree (each internal
node's children by the verifier's drafting rule, probability ``prod P(children | q)``), takes the
verifier's exact conditional law of the outcome ``(node, token)`` given the tree (its randomness
integrated out), and continues the emitted sequence (accepted tokens, then the emitted one) by target
sampling to ``D + 1`` tokens:

    law(s) = sum_trees P(tree) sum_(n, y) P(n, y | tree) T(s | path(n) y),    s in V^(D+1)

which an exact verifier makes equal to the target's law ``T(s) = prod_t p(s_t | s_<t)``:
``max_error = max_s |law(s) - T(s)|`` (float64 rounding: ~1e-16; ``EXACT_TOLERANCE`` = 1e-12) and
``tv = 1/2 sum_s |law(s) - T(s)|``. ``expected_accepted`` is ``E[depth(n)]``, the draft tokens
accepted per round, averaged over trees and randomness.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from resispec.audit.exact import EXACT_TOLERANCE
from resispec.sequence import RoundVerifier, get_round_verifier
from resispec.sequence.tree import RoundTree, round_tree
from resispec.validation import as_count, as_distribution

Conditional = Callable[[tuple[int, ...]], np.ndarray]
"""``prefix -> next-token distribution`` (shape (V,)); the prefix holds the ids after the root."""

MAX_TREES = 100_000
"""Default ceiling on the number of drafted trees one audit may enumerate."""


@dataclass(frozen=True)
class RoundExactLaw:
    """The round's enumerated sequence law and the target's (shape (V^(D+1),), token ids big-endian),
    their distance, the expected accepted draft tokens per round and the trees visited."""

    law: np.ndarray
    target: np.ndarray
    max_error: float
    tv: float
    expected_accepted: float
    trees: int

    @property
    def exact(self) -> bool:
        return self.max_error <= EXACT_TOLERANCE


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


def exact_round_law(verifier: RoundVerifier | str, target: Conditional, draft: Conditional, vocab_size: int,
                    branching: Sequence[int], max_trees: int = MAX_TREES) -> RoundExactLaw:
    """The exact law of one round of ``verifier`` (a round verifier or a name; zoo names verify node
    by node) over the ``target`` and ``draft`` models, against the target's (module doc)."""
    verifier = get_round_verifier(verifier) if isinstance(verifier, str) else verifier
    parents = branching_parents(branching)
    depth = len(branching)
    p_at = lru_cache(maxsize=None)(lambda prefix: as_distribution(target(prefix), "target(prefix)"))
    q_at = lru_cache(maxsize=None)(lambda prefix: as_distribution(draft(prefix), "draft(prefix)"))
    for prefix_law in (p_at(()), q_at(())):
        if prefix_law.size != vocab_size:
            raise ValueError(f"vocab_size: the models' distributions have {prefix_law.size} entries, not {vocab_size}")
    count = _tree_count(verifier, q_at(()), parents)
    if count > max_trees:
        raise ValueError(f"branching: about {count} drafted trees to enumerate, more than max_trees = {max_trees}; "
                         "use a smaller vocabulary or tree")

    @lru_cache(maxsize=None)
    def continuation(prefix: tuple[int, ...], length: int) -> np.ndarray:
        """The target's law of the next ``length`` tokens after ``prefix`` (flattened, big-endian)."""
        if length == 0:
            return np.ones(1)
        p = p_at(prefix)
        return np.concatenate([p[y] * continuation((*prefix, y), length - 1) for y in range(vocab_size)])

    @lru_cache(maxsize=None)
    def next_then_target(prefix: tuple[int, ...]) -> np.ndarray:
        """Row y: the target's law of the tokens after ``prefix + (y,)`` up to length D + 1."""
        rest = depth - len(prefix)
        return np.stack([continuation((*prefix, y), rest) for y in range(vocab_size)])

    law = np.zeros(vocab_size ** (depth + 1))
    accepted = 0.0
    trees = 0
    for tokens, probability in _trees(verifier, parents, q_at):
        tree = round_tree(parents, tokens, vocab_size)
        prefixes = _prefixes(tree)
        p = np.stack([p_at(prefix) for prefix in prefixes])
        q = np.stack([q_at(prefixes[n]) for n in range(tree.num_internal)])
        outcome = verifier.law(tree, p, q)
        joint = outcome.joint
        for node, prefix in enumerate(prefixes):
            if outcome.stop[node] == 0.0:
                continue
            block = vocab_size ** (depth - len(prefix) + 1)
            start = _index(prefix, vocab_size) * block
            law[start:start + block] += probability * (joint[node][:, None] * next_then_target(prefix)).ravel()
        accepted += probability * outcome.expected_accepted(tree)
        trees += 1
    reference = continuation((), depth + 1)
    error = np.abs(law - reference)
    return RoundExactLaw(law=law, target=reference, max_error=float(error.max()), tv=0.5 * float(error.sum()),
                         expected_accepted=accepted, trees=trees)


def _index(prefix: tuple[int, ...], vocab_size: int) -> int:
    index = 0
    for token in prefix:
        index = index * vocab_size + token
    return index


def _prefixes(tree: RoundTree) -> list[tuple[int, ...]]:
    """Each node's prefix: the drafted tokens from the root's child down to the node."""
    prefixes: list[tuple[int, ...]] = [()]
    for node in range(1, tree.num_nodes):
        prefixes.append((*prefixes[tree.parents[node]], int(tree.tokens[node])))
    return prefixes


def _tree_count(verifier: RoundVerifier, q_root: np.ndarray, parents: np.ndarray) -> int:
    """The number of trees if every internal node had the root's draft support (an estimate)."""
    sizes = np.bincount(parents[1:], minlength=parents.size)
    return math.prod(verifier.scheme.tuple_count(q_root, int(k)) for k in sizes if k > 0)


def _trees(verifier: RoundVerifier, parents: np.ndarray, q_at: Callable[[tuple[int, ...]], np.ndarray]
           ) -> Iterator[tuple[list[int], float]]:
    """Every drafted tree: the node tokens (the root's is 0, unused) and the drafting probability."""
    children = [np.flatnonzero(parents == node).tolist() for node in range(parents.size)]
    internal = [node for node in range(parents.size) if children[node]]

    def expand(position: int, tokens: list[int], prefixes: list[tuple[int, ...]], probability: float
               ) -> Iterator[tuple[list[int], float]]:
        if position == len(internal):
            yield list(tokens), probability
            return
        node = internal[position]
        for drawn, chance in verifier.scheme.tuples(q_at(prefixes[node]), len(children[node])):
            for child, token in zip(children[node], drawn):
                tokens[child] = token
                prefixes[child] = (*prefixes[node], token)
            yield from expand(position + 1, tokens, prefixes, probability * chance)

    yield from expand(0, [0] * parents.size, [()] * parents.size, 1.0)
