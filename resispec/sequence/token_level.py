"""Token-level tree verification as a round verifier: any verifier of the zoo, node by node.

Walk down from the root: at node v the zoo verifier sees ``p_v``, ``q_v`` and v's children; an
accepted child becomes the next node, a residual token ends the round; at a leaf the bonus token is
drawn from ``p`` there. The engine's default loop (``resispec.engine.decode.decoding``) is this rule.

The round law needs, per node, the probability that each child *slot* is accepted (i.i.d. children
may repeat a token with different subtrees below) and the residual's law:
``node_split(bound, candidates) -> (accepted [k], residual [V])`` with
``sum(accepted) + sum(residual) = 1``. For a sequential verifier it follows the step rule; for
``pooled`` (selection of one candidate, then single-draft verification) the accepted mass of a token
is split evenly between its equal candidates. Any split between equal i.i.d. candidates gives the
same sequence law, since their subtrees are drafted i.i.d. given the token.

Uniform layout: each internal node's block of ``uniforms_needed(k)`` (the zoo's layout), in node
order, then one for the bonus token.
"""

from __future__ import annotations

import numpy as np

from resispec.sampling import inverse_cdf
from resispec.sequence.base import RoundVerifier
from resispec.sequence.tree import RoundLaw, RoundTree
from resispec.verifiers import SequentialVerifier, Verifier, get_verifier
from resispec.verifiers.base import BoundVerifier, _final_residual
from resispec.verifiers.select_then_verify import SelectThenVerify


def node_split(bound: BoundVerifier, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(accepted, residual)``: P(slot i is accepted) (shape (k,)) and the sub-probability of each
    token being emitted from the residual (shape (V,)), given the candidates."""
    verifier = bound.verifier
    accepted = np.zeros(candidates.size)
    if isinstance(verifier, SequentialVerifier):
        reach = 1.0
        steps = verifier._steps(bound, candidates)
        for index in range(candidates.size):
            acceptance = next(steps)
            accepted[index] = reach * acceptance
            reach *= 1.0 - acceptance
            if reach == 0.0:
                return accepted, np.zeros(bound.p.size)
        residual = _final_residual(steps)
        mass = residual.sum()
        if not mass > 0:
            accepted[-1] += reach
            return accepted, np.zeros(bound.p.size)
        return accepted, reach * residual / mass
    if isinstance(verifier, SelectThenVerify):
        accepted, rejected = verifier._row_split(bound.plan, candidates[None])
        return accepted[0], rejected[0]
    raise ValueError(f"verifier: {verifier.name} has no per-slot law for round verification")


class TokenLevel(RoundVerifier):
    """A zoo verifier applied node by node down the tree (exact iff the zoo verifier is)."""

    def __init__(self, name: str) -> None:
        self.node_verifier: Verifier = get_verifier(name)

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.node_verifier.name

    @property
    def drafting(self) -> str:  # type: ignore[override]
        return self.node_verifier.drafting

    @property
    def claims_exact(self) -> bool:  # type: ignore[override]
        return self.node_verifier.claims_exact

    def check_tree(self, tree: RoundTree) -> None:
        limit = self.node_verifier.max_k
        widest = max(len(c) for c in tree.children)
        if limit is not None and widest > limit:
            raise ValueError(f"tree: {self.name} verifies at most {limit} candidate(s) per node, "
                             f"this tree has a node with {widest} children")

    def _blocks(self, tree: RoundTree) -> list[int]:
        """Start of each internal node's uniforms."""
        sizes = [self.node_verifier.uniforms_needed(len(tree.children[n])) for n in range(tree.num_internal)]
        return np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()

    def uniforms_needed(self, tree: RoundTree) -> int:
        return self._blocks(tree)[-1] + 1

    def _candidates(self, tree: RoundTree, node: int) -> tuple[tuple[int, ...], np.ndarray]:
        children = tree.children[node]
        return children, tree.tokens[list(children)]

    def _decide(self, tree: RoundTree, p: np.ndarray, q: np.ndarray, u: np.ndarray) -> tuple[int, int]:
        blocks = self._blocks(tree)
        node = 0
        while tree.children[node]:
            children, candidates = self._candidates(tree, node)
            bound = self.node_verifier._bind_validated(p[node], q[node], candidates.size)
            token, index = bound.verify(candidates, u[blocks[node]:blocks[node + 1]])
            if index < 0:
                return node, token
            node = children[index]
        return node, int(inverse_cdf(p[node], u[-1]))

    def _law(self, tree: RoundTree, p: np.ndarray, q: np.ndarray) -> RoundLaw:
        stop = np.zeros(tree.num_nodes)
        emission = p.copy()
        reach = np.zeros(tree.num_nodes)
        reach[0] = 1.0
        for node in range(tree.num_nodes):
            if not tree.children[node]:
                stop[node] = reach[node]
                continue
            children, candidates = self._candidates(tree, node)
            bound = self.node_verifier._bind_validated(p[node], q[node], candidates.size)
            accepted, residual = node_split(bound, candidates)
            reach[list(children)] = reach[node] * accepted
            mass = residual.sum()
            stop[node] = reach[node] * mass
            if mass > 0:
                emission[node] = residual / mass
        return RoundLaw(stop=stop, emission=emission)
