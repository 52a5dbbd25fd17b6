"""The verification walk, written once: A drafted trees verified from their roots down, depth by depth.

Both loops run it: `resispec.engine.decode.decoding.Decoder` on one tree (A = 1, with its hooks: counts, log, audit
through ``on_token``) and `resispec.engine.decode.batch.BatchDecoder` on A sequences' trees at once. At each depth, the
live trees' nodes are decided together: the chain part (depths before the first node with several children) by
one batched sps call made first for all its nodes (`resispec.engine.decode.decoding`'s module docstring says why
deciding nodes past a rejection is harmless), the others by one ``verify_batch`` call per number of real
candidates; a tree whose node rejected stops (its residual token emitted), one that accepted moves to the chosen
child; a tree that reaches a leaf emits one token drawn from p at the leaf (`sample_rows`). Randomness: the loop's
generator ``rng``, drawn call by call in that order, tree by tree within a call, so one tree draws exactly what
the one-tree loop draws.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import numpy as np
import torch

from resispec.engine.runtime.tree import CandidateTree
from resispec.engine.verifiers.node_verification import NodeVerifier
from resispec.sampling import inverse_cdf_rows

OnToken = Callable[[int, int, "torch.Tensor | None", int, int], None]
"""``on_token(a, node, candidates, token, index)``: tree a emitted ``token`` at ``node``; ``candidates`` (k,) and the
accepted slot ``index`` (-1: rejected) for a verified node, None and -1 for a leaf's token."""


def sample_rows(p: torch.Tensor, rng: np.random.Generator) -> list[int]:
    """One token per row of p (A, V) by inverse CDF at uniforms ``rng.random(A)``."""
    u = torch.from_numpy(rng.random(p.shape[0])).to(p.device)
    return inverse_cdf_rows(p, u).tolist()


def walk(tree: CandidateTree, chain_length: int, chain_verifier: NodeVerifier | None, node_verifier: NodeVerifier,
         tokens: torch.Tensor, p_all: torch.Tensor, q_all: torch.Tensor, rng: np.random.Generator,
         on_token: OnToken | None = None) -> tuple[list[int], list[list[int]]]:
    """Verify A trees (module docstring): per tree its deepest accepted node and its emitted tokens.

    Args:
        tree: the shape of every tree; ``chain_length``: its leading levels of one child each (decided by
            ``chain_verifier``, sps, where not None).
        tokens: long (A, N), each tree's logical nodes breadth first (node 0 the root).
        p_all: (A, N, V) the processed p at every node; q_all: (A, I, V) the processed q at the I internal nodes.
    """
    count = tokens.shape[0]
    ends, emitted = [0] * count, [[] for _ in range(count)]
    decided = None
    m = chain_length if chain_verifier is not None else 0
    if m:  # the chain part's nodes 0..m-1 of every tree at once
        chain = chain_verifier.verify_batch(p_all[:, :m].reshape(count * m, -1), q_all[:, :m].reshape(count * m, -1),
                                            tokens[:, 1: m + 1].reshape(count * m, 1), rng)
        decided = [part.reshape(count, m) for part in chain]
    live = list(range(count))
    for depth in range(tree.depth + 1):
        if not live:
            break
        if depth == tree.depth:  # a leaf was accepted: one token from p at the leaf
            for a, token in zip(live, sample_rows(p_all[live, [ends[a] for a in live]], rng)):
                emitted[a].append(token)
                if on_token is not None:
                    on_token(a, ends[a], None, token, -1)
            break
        decisions = {}
        if depth < m:
            decisions = {a: (tokens[a, tree.children(ends[a])], int(decided[0][a, depth]), int(decided[1][a, depth]))
                         for a in live}
        else:
            groups = defaultdict(list)  # trees by their node's number of real candidates
            for a in live:
                children = tree.children(ends[a])
                candidates = node_verifier.candidates(q_all[a, ends[a]], tokens[a, children])
                groups[len(candidates)].append((a, candidates))
            for group in groups.values():
                index = [a for a, _ in group]
                nodes = [ends[a] for a in index]
                chosen, slot = node_verifier.verify_batch(p_all[index, nodes], q_all[index, nodes],
                                                          torch.stack([c for _, c in group]), rng)
                decisions.update({a: (c, int(t), int(i)) for (a, c), t, i in zip(group, chosen, slot)})
        for a in list(live):
            candidates, token, index = decisions[a]
            emitted[a].append(token)
            if on_token is not None:
                on_token(a, ends[a], candidates, token, index)
            if index < 0:
                live.remove(a)
            else:
                ends[a] = tree.children(ends[a]).start + index
    return ends, emitted
