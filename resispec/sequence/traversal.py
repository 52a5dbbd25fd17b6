"""traversal: traversal verification of a drafted tree (Weng, Hu et al., "Traversal Verification for
Speculative Tree Decoding", arXiv 2505.12398, NeurIPS 2025). Exact; equals ``block`` on a chain.

State at a node v: a weight ``w_v`` in [0, 1], a target ``pi_v`` (initially ``p_v``) and the law
``d_v`` the next untried child is drawn from (``q_v``; without replacement: ``q_v`` with the tried
children removed, renormalised). The root starts at ``w = 1``. Verification is a depth-first,
post-order traversal: at v, for each child c in draw order,

1. give c the sequence-level weight ``w_c = min(1, w_v pi_v(c) / d_v(c))`` and traverse c's subtree;
   if it succeeds, its outcome is the round's;
2. if it fails, update v with the weighted residual ``R = (w_v pi_v - d_v)+`` (mass r) and
   ``s = sum min(d_v, w_v pi_v) = w_v - r``:  ``w_v <- r / (1 - s)``,  ``pi_v <- norm(R)``, and, without
   replacement, ``d_v <- norm(d_v without c)``.

Once every child has failed (at once for a leaf), v succeeds with probability ``w_v``: the path root ->
v is accepted and a token is drawn from ``pi_v`` (from ``p_v`` at an untouched leaf: the bonus token);
otherwise v fails and control returns to its parent. The root always succeeds (its weight stays 1).

Quantities needed: p at every node, the draft law at every internal node, the drafted tokens. On a
chain the rule is block verification (``resispec.sequence.block``); at a single level it is rrs
(i.i.d.) or rrs_wor (without replacement).

Why exact (theory/sequence/block.py, theory/sequence/traversal.py): by induction over subtrees, a subtree traversed with
weight w succeeds with probability w on average over its drafting, and the mass it sends into each
next token y (alive at the child y, or stopped emitting y) is ``w pi(y)``. A child's failure is
independent of its later siblings' drafting, so the update (the remaining mass ``R`` out of the
failure probability ``1 - s``) keeps the sibling process exact; a failed child c has ``R(c) = 0``, so
removing c from the draft (without replacement) changes nothing.

Uniform layout (``uniforms_needed = N``): ``u[n]`` decides node n's success (success iff
``u[n] < w_n``) for n >= 1; ``u[0]`` draws the emitted token by inverse CDF (token ids ascending).
"""

from __future__ import annotations

import numpy as np

from resispec.sampling import inverse_cdf
from resispec.sequence.base import RoundVerifier
from resispec.sequence.tree import RoundLaw, RoundTree


class NodeState:
    """The state ``(w, pi, d)`` of one node while its children are traversed (module doc)."""

    def __init__(self, weight: float, target: np.ndarray, draft: np.ndarray | None, without_replacement: bool) -> None:
        self.weight = weight
        self.target = target
        self.draft = draft
        self.without_replacement = without_replacement

    def child_weight(self, token: int) -> float:
        """``min(1, w pi(c) / d(c))``; 0 for a token the draft can no longer propose (a padding child)."""
        if self.draft[token] <= 0:
            return 0.0
        return min(1.0, self.weight * self.target[token] / self.draft[token])

    def reject(self, token: int) -> None:
        """A child with ``token`` failed: move to the weighted residual."""
        weighted = self.weight * self.target
        residual = np.maximum(weighted - self.draft, 0.0)
        mass = residual.sum()
        fail = 1.0 - np.minimum(self.draft, weighted).sum()
        self.weight = min(1.0, mass / fail) if fail > 0 else 1.0
        if mass > 0:
            self.target = residual / mass
        if self.without_replacement:
            draft = self.draft.copy()
            draft[token] = 0.0
            total = draft.sum()
            self.draft = draft / total if total > 0 else draft


class Traversal(RoundVerifier):
    """Traversal verification, children drafted i.i.d. from q. Exact; block verification on chains."""

    name = "traversal"
    drafting = "iid"
    claims_exact = True

    def uniforms_needed(self, tree: RoundTree) -> int:
        return tree.num_nodes

    def _state(self, tree: RoundTree, p: np.ndarray, q: np.ndarray, node: int, weight: float) -> NodeState:
        draft = q[node] if node < tree.num_internal else None
        return NodeState(weight, p[node], draft, self.drafting == "wor")

    def _decide(self, tree: RoundTree, p: np.ndarray, q: np.ndarray, u: np.ndarray) -> tuple[int, int]:
        def subtree(node: int, weight: float) -> tuple[int, int] | None:
            state = self._state(tree, p, q, node, weight)
            for child in tree.children[node]:
                token = int(tree.tokens[child])
                outcome = subtree(child, state.child_weight(token))
                if outcome is not None:
                    return outcome
                state.reject(token)
            if node == 0 or u[node] < state.weight:
                return node, int(inverse_cdf(state.target, u[0]))
            return None

        return subtree(0, 1.0)

    def _law(self, tree: RoundTree, p: np.ndarray, q: np.ndarray) -> RoundLaw:
        """``stop[n]`` = P(the traversal enters n) x P(all of n's children fail) x ``w_n`` (1 at the
        root); ``emission[n]`` = n's target once its children have failed."""
        stop = np.zeros(tree.num_nodes)
        emission = p.copy()

        def subtree(node: int, weight: float, enter: float) -> float:
            """Probability that node's subtree succeeds, given that the traversal enters it."""
            state = self._state(tree, p, q, node, weight)
            reach = 1.0
            for child in tree.children[node]:
                token = int(tree.tokens[child])
                reach *= 1.0 - subtree(child, state.child_weight(token), enter * reach)
                if reach == 0.0:
                    return 1.0
                state.reject(token)
            own = 1.0 if node == 0 else state.weight
            stop[node] = enter * reach * own
            emission[node] = state.target
            return 1.0 - reach + reach * own

        subtree(0, 1.0, 1.0)
        return RoundLaw(stop=stop, emission=emission)


class TraversalWOR(Traversal):
    """Traversal verification, children drafted without replacement. Exact."""

    name = "traversal_wor"
    drafting = "wor"
