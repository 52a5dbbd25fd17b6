"""block: block verification of a drafted chain (Sun, Mendlovic, Leviathan et al., "Block Verification
Accelerates Speculative Decoding", arXiv 2403.10444, ICLR 2025). Exact; optimal for chains.

Chain ``x_1..x_g`` drafted from q (node i = the prefix ``x_1..x_i``, node 0 the root), ``p_i``/``q_i``
the target/draft laws after node i. Sequence-level weights along the path::

    w_0 = 1,   w_{i+1} = min(1, w_i p_i(x_{i+1}) / q_i(x_{i+1}))

(``w_i`` caps the running ratio ``P(x_<=i) / Q(x_<=i)``). At node i < g the *weighted residual* is
``R_i = (w_i p_i - q_i)+`` with mass ``r_i``, and ``s_i = sum min(q_i, w_i p_i) = w_i - r_i``.
Verification walks backwards, from the leaf up: node g is accepted with probability ``h_g = w_g``,
node i (0 < i < g) with ``h_i = r_i / (1 - s_i)``, the root always (``h_0 = 1``); the first node
accepted ends the path. The emitted token is drawn from ``p_g`` at the leaf, from ``norm(R_i)`` at
node i < g.

Why exact (theory/sequence/block.py): given ``x_<=i``, the chain is still alive at node i with probability
``w_i``, and the mass flowing from node i into token y, alive at ``x_<=i y`` (``min(q_i(y), w_i p_i(y))``)
plus stopped at i emitting y (``(w_i p_i(y) - q_i(y))+``), is ``w_i p_i(y)``: flow proportional to
p at every prefix, which is sequence-level exactness. Why optimal: any exact verifier's alive mass
satisfies ``A(x_<=i y) <= min(Q(x_<=i y), A(x_<=i) p_i(y))``, whose recursion is exactly ``Q w``; block
verification attains it at every prefix, so it maximises ``P(accepted >= i)`` for every i, hence the
expected accepted length (never below token-by-token verification).

Uniform layout (``uniforms_needed = g + 1``): ``u[i]`` decides node i's acceptance (accept iff
``u[i] < h_i``), ``u[0]`` draws the emitted token by inverse CDF (token ids ascending). The same
layout as ``traversal`` on a chain, which then makes the same decisions.
"""

from __future__ import annotations

import numpy as np

from resispec.sampling import inverse_cdf
from resispec.sequence.base import RoundVerifier
from resispec.sequence.tree import RoundLaw, RoundTree


def chain_plan(tree: RoundTree, p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(h, emission)`` for a chain: acceptance probability of node i once the deeper nodes are
    rejected (shape (g + 1,), ``h[0] = 1``), and the law emitted at node i (shape (g + 1, V))."""
    g = tree.num_nodes - 1
    drafted = tree.tokens[1:]
    weights = np.ones(g + 1)
    emission = p.copy()
    h = np.ones(g + 1)
    for i in range(g):
        ratio = p[i, drafted[i]] / q[i, drafted[i]]
        weights[i + 1] = min(1.0, weights[i] * ratio)
        residual = np.maximum(weights[i] * p[i] - q[i], 0.0)
        mass = residual.sum()
        if mass > 0:
            emission[i] = residual / mass
        if i > 0:
            fail = 1.0 - np.minimum(q[i], weights[i] * p[i]).sum()
            h[i] = min(1.0, mass / fail) if fail > 0 else 1.0
    h[g] = weights[g] if g > 0 else 1.0
    return h, emission


class Block(RoundVerifier):
    """Block verification of a chain: backwards from the leaf, sequence-level weights. Exact; optimal."""

    name = "block"
    drafting = "iid"
    claims_exact = True
    chains_only = True

    def uniforms_needed(self, tree: RoundTree) -> int:
        return tree.num_nodes

    def _plan(self, tree: RoundTree, p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return chain_plan(tree, p, q)

    def _decide(self, tree: RoundTree, p: np.ndarray, q: np.ndarray, u: np.ndarray) -> tuple[int, int]:
        h, emission = self._plan(tree, p, q)
        node = next(i for i in range(tree.num_nodes - 1, -1, -1) if i == 0 or u[i] < h[i])
        return node, int(inverse_cdf(emission[node], u[0]))

    def _law(self, tree: RoundTree, p: np.ndarray, q: np.ndarray) -> RoundLaw:
        h, emission = self._plan(tree, p, q)
        survive = np.concatenate([np.cumprod((1.0 - h)[::-1])[::-1][1:], [1.0]])  # prod_{j > i} (1 - h_j)
        return RoundLaw(stop=h * survive, emission=emission)


class BlockNaive(Block):
    """Control (biased): block verification that accepts node i with the bare weight ``w_i`` and
    emits ``norm((p_i - q_i)+)`` at a stop, dropping the correction ``h_i = r_i / (1 - s_i)`` and the
    weighted residual; the sequence-level audit must flag it."""

    name = "block_naive"
    claims_exact = False

    def _plan(self, tree: RoundTree, p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        g = tree.num_nodes - 1
        drafted = tree.tokens[1:]
        ratios = p[np.arange(g), drafted] / q[np.arange(g), drafted]
        h = np.concatenate([[1.0], np.minimum(1.0, np.cumprod(ratios))])
        emission = p.copy()
        residual = np.maximum(p[:g] - q[:g], 0.0)
        mass = residual.sum(axis=1)
        emission[:g][mass > 0] = residual[mass > 0] / mass[mass > 0, None]
        return h, emission
