"""gbv: greedy multi-path block verification of K drafted paths, children i.i.d. (our greedy rule for the
setting of Thomas & Pal, "Greedy Multi-Path Block Verification for Faster Decoding in Speculative Sampling",
arXiv 2602.16961; only the paper's abstract and introduction were reachable, so this is *our* greedy member of
the multi-path block class, not a transcription of theirs: docs/verifiers/gbv.md). Exact; ``block`` at K = 1.

The K paths are drafted independently from the draft model (a tree whose internal nodes' children are i.i.d.
draws from q at that prefix; K paths of length L are the tree ``K, 1, ..., 1``). Paths that share a prefix are
merged into the **prefix trie**: a trie node s stands for every drafted node with token path s, and its
children are the *distinct* next tokens of the paths through s, in order of first appearance in draw order
(node index order). The trie is verified by block verification's tree form with the without-replacement
residual at every node (``traversal_wor`` on the trie):

    a node s with weight w, target pi (initially p_s) and draft d (initially q_s) gives its next distinct
    child c the weight min(1, w pi(c) / d(c)) and verifies c's subtree (every path through c at once); if
    it fails, s moves to the weighted residual, w <- r / (1 - s_), pi <- norm((w pi - d)+), d <- norm(d
    without c); once every child failed, s succeeds with probability w and emits from pi.

So the paths are examined greedily, one after another in draw order, each by block verification against the
target *conditioned on the failures before it*, and a path that shares a prefix with an earlier one resumes
at the deepest shared node instead of starting again at the root. (Without the merge, "each path by block
verification against the root residual the earlier paths' failures leave" is ``traversal`` on the K-path
tree: traversal on a chain decides like block, and the root's residual update is the conditioning.)

Why exact (theory/sequence/gbv.py): the distinct next tokens at s, in order of first appearance among i.i.d.
draws from q_s, are distributed as draws *without replacement* from q_s stopped at a random time, and whether
another distinct token comes is independent of which one it will be given everything seen so far (each
remaining draw lands on a seen token, or off them with law q_s restricted to the unseen tokens); given the
number of paths through a child, their continuations are i.i.d. from q at the child. rrs_wor stays exact
under such a stopping time, and the lift of an exact sequential node rule is exact (``traversal.lift_exact``).

Every drafted node with a given token path carries the same ``p`` (and ``q``) rows; the trie reads them from
the path's first node. Draw order is node index order (internal nodes first, as every ``RoundTree``): fixed by
the shape, never by the tokens, which is all the exactness argument needs; any i.i.d. tree is accepted.

Uniform layout (``uniforms_needed = N``, the tree's node count): trie node s uses ``u[n]`` of its first
drafted node n (``u[0]`` draws the emitted token by inverse CDF, as ``traversal``).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from resispec.sequence.base import RoundVerifier
from resispec.sequence.traversal import Traversal, TraversalWOR
from resispec.sequence.tree import RoundLaw, RoundTree, round_tree


def prefix_trie(tree: RoundTree) -> tuple[RoundTree, np.ndarray]:
    """The prefix trie of ``tree`` and, for each trie node, the first drafted node with its token path
    (shape (T,), ``rep[0] = 0``). Trie nodes are created in node index order, which is the draw order: a trie
    node's children are its distinct next tokens by first appearance, and the trie comes out numbered internal
    nodes first (a trie node is internal iff one of its drafted nodes is, and those precede every leaf)."""
    where: dict[tuple[int, int], int] = {}  # (trie parent, token) -> trie node
    trie_of = np.zeros(tree.num_nodes, dtype=np.int64)
    parents, tokens, rep = [-1], [0], [0]
    for node in range(1, tree.num_nodes):
        key = (int(trie_of[tree.parents[node]]), int(tree.tokens[node]))
        if key not in where:
            where[key] = len(parents)
            parents.append(key[0])
            tokens.append(key[1])
            rep.append(node)
        trie_of[node] = where[key]
    return round_tree(parents, tokens, max(tokens) + 1), np.asarray(rep)


class GBV(RoundVerifier):
    """Greedy multi-path block verification over the prefix trie of i.i.d. paths (module doc). Exact."""

    name = "gbv"
    drafting = "iid"
    claims_exact = True
    trie_rule: ClassVar[type[Traversal]] = TraversalWOR

    def uniforms_needed(self, tree: RoundTree) -> int:
        return tree.num_nodes

    def _trie(self, tree: RoundTree, p: np.ndarray, q: np.ndarray
              ) -> tuple[RoundTree, np.ndarray, np.ndarray, np.ndarray]:
        """The prefix trie, its nodes' first drafted nodes, and their p and q rows."""
        trie, rep = prefix_trie(tree)
        return trie, rep, p[rep], q[rep[:trie.num_internal]]

    def _decide(self, tree: RoundTree, p: np.ndarray, q: np.ndarray, u: np.ndarray) -> tuple[int, int]:
        trie, rep, p_trie, q_trie = self._trie(tree, p, q)
        node, token = self.trie_rule()._decide(trie, p_trie, q_trie, u[rep])
        return int(rep[node]), token

    def _law(self, tree: RoundTree, p: np.ndarray, q: np.ndarray) -> RoundLaw:
        trie, rep, p_trie, q_trie = self._trie(tree, p, q)
        law = self.trie_rule()._law(trie, p_trie, q_trie)
        stop = np.zeros(tree.num_nodes)
        stop[rep] = law.stop
        emission = p.copy()
        emission[rep] = law.emission
        return RoundLaw(stop=stop, emission=emission)


class GBVNaive(GBV):
    """Control (biased): gbv whose trie nodes keep drafting from the full ``q`` after a child failed (the
    i.i.d. residual of ``traversal``), as if the merged paths' distinct children were i.i.d. draws; a
    later distinct child is never a tried token, so its law given the earlier failures is not ``q``."""

    name = "gbv_naive"
    claims_exact = False
    trie_rule = Traversal
