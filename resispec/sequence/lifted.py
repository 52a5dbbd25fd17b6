"""Lifted verification: any exact sequential node rule run at sequence level over a tree, with a
*fail token*. ``traversal_resispec`` (resispec's residual shaping with traversal's sequence-level
weights) and ``traversal_resispec_wor`` are lifts; traversal verification is the lift of rrs, block
verification the lift of sps (checked equal by the round-law tests).

A node v entered with weight w in [0, 1] faces the node problem on V + 1 tokens

    p'_v = (w p_v, 1 - w),    q'_v = (q_v, 0)        (the extra token ⊥ = "v fails")

and runs the node rule's steps on its children in draw order. Where the node rule would accept
child c with probability ``a``, the lift traverses c's subtree with weight ``a`` instead: the subtree
succeeds (its outcome is the round's) or fails, which the node rule sees as a rejection of c. Once
every child has failed, a token is drawn from the node rule's final residual: ⊥ means v fails (back
to its parent), any other token y ends the round at v emitting y. A leaf entered with weight w
succeeds with probability w and emits the bonus token from ``p_leaf``. The root is entered with
w = 1 (no ⊥ mass), so it never fails.

Why exact (theory/sequence/block.py): induction over subtrees. A subtree entered with weight a succeeds with
probability a on average over its drafting and sends mass ``a p(y | c)`` into each next token y
(alive at a child y, or stopped emitting y). Its success is independent of the later siblings'
drafting, so the node rule, exact for ``(p'_v, q'_v)`` whatever way its acceptance coins are tossed,
emits ``p'_v``: mass ``w p_v(y)`` flows into each y and ``1 - w`` to ⊥, the node's failure. At the root
this is the flow condition of sequence-level exactness. Block and traversal are the cases where the
node rule is sps / rrs; the lift keeps any exact sequential rule exact, so residual shaping composes
with sequence-level acceptance.

Uniform layout (``uniforms_needed = N + 1``): ``u[n]`` draws internal node n's final residual (⊥
included, inverse CDF, ⊥ last) or decides leaf n's success (success iff ``u[n] < w``); ``u[N]``
draws a leaf's bonus token.
"""

from __future__ import annotations

import numpy as np

from resispec.sampling import inverse_cdf
from resispec.sequence.base import RoundVerifier
from resispec.sequence.tree import RoundLaw, RoundTree
from resispec.verifiers import SequentialVerifier, get_verifier
from resispec.verifiers.base import StepGenerator, _final_residual


class Lifted(RoundVerifier):
    """The lift of an exact sequential zoo verifier (``node_rule``) to sequence level (module doc)."""

    claims_exact = True

    def __init__(self, node_rule: str) -> None:
        rule = get_verifier(node_rule)
        if not isinstance(rule, SequentialVerifier):
            raise ValueError(f"node_rule: {node_rule} is not a sequential verifier, so it has no lift")
        self.node_rule = rule

    @property
    def drafting(self) -> str:  # type: ignore[override]
        return self.node_rule.drafting

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"traversal_{self.node_rule.name}"

    def uniforms_needed(self, tree: RoundTree) -> int:
        return tree.num_nodes + 1

    def _steps(self, tree: RoundTree, p: np.ndarray, q: np.ndarray, node: int, weight: float) -> StepGenerator:
        """The node rule's steps on ``(p', q')`` with node's children as the candidates."""
        p_lift = np.append(weight * p[node], 1.0 - weight)
        q_lift = np.append(q[node], 0.0)
        candidates = tree.tokens[list(tree.children[node])]
        bound = self.node_rule._bind_validated(p_lift / p_lift.sum(), q_lift, candidates.size)
        return self.node_rule._steps(bound, candidates)

    def _decide(self, tree: RoundTree, p: np.ndarray, q: np.ndarray, u: np.ndarray) -> tuple[int, int]:
        vocab_size = p.shape[1]

        def subtree(node: int, weight: float) -> tuple[int, int] | None:
            if not tree.children[node]:
                return (node, int(inverse_cdf(p[node], u[-1]))) if u[node] < weight or node == 0 else None
            steps = self._steps(tree, p, q, node, weight)
            for child in tree.children[node]:
                outcome = subtree(child, next(steps))
                if outcome is not None:
                    return outcome
            residual = _final_residual(steps)
            if not residual.sum() > 0:  # reachable through rounding only
                return (node, int(p[node].argmax())) if node == 0 else None
            token = int(inverse_cdf(residual, u[node]))
            return (node, token) if token < vocab_size else None

        return subtree(0, 1.0)

    def _law(self, tree: RoundTree, p: np.ndarray, q: np.ndarray) -> RoundLaw:
        """``stop[n]`` = P(enter n) x P(all of n's children fail) x P(n's residual draws a token, not ⊥)."""
        vocab_size = p.shape[1]
        stop = np.zeros(tree.num_nodes)
        emission = p.copy()

        def subtree(node: int, weight: float, enter: float) -> float:
            """Probability that node's subtree succeeds, given that it is entered with ``weight``."""
            if not tree.children[node]:
                stop[node] = enter * weight
                return weight
            steps = self._steps(tree, p, q, node, weight)
            reach = 1.0
            for child in tree.children[node]:
                reach *= 1.0 - subtree(child, next(steps), enter * reach)
                if reach == 0.0:
                    return 1.0
            residual = _final_residual(steps)
            tokens = residual[:vocab_size]
            own = tokens.sum() / residual.sum() if residual.sum() > 0 else float(node == 0)
            if tokens.sum() > 0:
                emission[node] = tokens / tokens.sum()
            stop[node] = enter * reach * own
            return 1.0 - reach + reach * own

        subtree(0, 1.0, 1.0)
        return RoundLaw(stop=stop, emission=emission)


class TraversalResiSpec(Lifted):
    """resispec's residual shaping lifted to sequence level over i.i.d. children. Exact."""

    name = "traversal_resispec"
    drafting = "iid"

    def __init__(self) -> None:
        super().__init__("resispec")


class TraversalResiSpecWOR(Lifted):
    """resispec_wor's residual shaping lifted to sequence level over WOR children. Exact."""

    name = "traversal_resispec_wor"
    drafting = "wor"

    def __init__(self) -> None:
        super().__init__("resispec_wor")
