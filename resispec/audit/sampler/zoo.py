"""The zoo's verifiers as samplers of the contract (``resispec.audit.sampler.contract``), NumPy float64 probs.

- node: ``zoo_sampler(name)`` runs the zoo verifier on each row (rows with the same ``(p, q)`` as one batched
  ``verify_many`` on one bound plan);
- chain, tree: ``zoo_sampler(name, "chain")`` / ``zoo_sampler(name, "tree", branching)`` run the round verifier
  ``resispec.sequence.get_round_verifier(name)`` (a zoo name verifies node by node; ``block``, ``traversal``,
  ... decide whole rounds) on each row's tree, rebuilt from the drafts (a chain's length is its number of
  drafts before -1, so the ``lengths`` extra is accepted and not needed) or from the paths and ``branching``.

Uniforms come from ``numpy.random.default_rng([seed, call])`` made inside each call, so an audit's edge probe
reaches them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import count

import numpy as np

from resispec.audit.sampler.drafting import tree_nodes
from resispec.sampling import inverse_cdf
from resispec.sequence import get_round_verifier
from resispec.sequence.enumeration import branching_parents
from resispec.sequence.tree import round_tree
from resispec.verifiers import get_verifier


def zoo_sampler(name: str, level: str = "node", branching: Sequence[int] | None = None,
                seed: int = 0) -> Callable[..., np.ndarray]:
    """The verifier ``name`` as a callable of the contract at ``level`` (module doc)."""
    calls = count()
    if level == "node":
        verifier = get_verifier(name)

        def node(p: np.ndarray, q: np.ndarray, candidates: np.ndarray) -> np.ndarray:
            rng = np.random.default_rng([seed, next(calls)])
            tokens = np.empty(candidates.shape[0], dtype=np.int64)
            keys = [p[b].tobytes() + q[b].tobytes() for b in range(p.shape[0])]
            for key in dict.fromkeys(keys):
                rows = np.array([b for b, other in enumerate(keys) if other == key])
                bound = verifier.bind(p[rows[0]], q[rows[0]], candidates.shape[1])
                u = rng.random((rows.size, verifier.uniforms_needed(candidates.shape[1])))
                tokens[rows] = bound.verify_many(candidates[rows], u)[0]
            return tokens
        return node
    if level not in ("chain", "tree"):
        raise ValueError(f"level: expected node, chain or tree, got {level!r}")
    if level == "tree" and branching is None:
        raise ValueError("branching: a tree sampler needs the children count per depth")
    verifier = get_round_verifier(name)

    def rounds(p: np.ndarray, q: np.ndarray, drafted: np.ndarray, lengths: np.ndarray | None = None) -> np.ndarray:
        rng = np.random.default_rng([seed, next(calls)])
        depth = drafted.shape[-1]
        out = np.full((drafted.shape[0], depth + 1), -1, dtype=np.int64)
        for b in range(drafted.shape[0]):
            if level == "chain" and drafted[b, 0] < 0:  # no drafts: the bonus row alone
                out[b, 0] = inverse_cdf(p[b, 0], rng.random())
                continue
            tree, p_nodes, q_nodes = (_chain(p[b], q[b], drafted[b]) if level == "chain"
                                      else _tree(p[b], q[b], drafted[b], tuple(branching)))
            node, token = verifier.verify(tree, p_nodes, q_nodes, rng.random(verifier.uniforms_needed(tree)))
            path = tree.path(node)[1:]
            out[b, :len(path)] = tree.tokens[path]
            out[b, len(path)] = token
        return out
    return rounds


def _chain(p: np.ndarray, q: np.ndarray, drafts: np.ndarray):
    """The chain of the drafts before -1: its tree, the target at every node, the draft at every internal one."""
    length = int(np.argmax(drafts < 0)) if (drafts < 0).any() else drafts.size
    parents = np.arange(-1, length)
    tokens = np.concatenate([[0], drafts[:length]])
    return round_tree(parents, tokens, p.shape[-1]), p[:length + 1], q[:length]


def _tree(p: np.ndarray, q: np.ndarray, paths: np.ndarray, branching: tuple[int, ...]):
    """The tree behind the paths (breadth-first numbering of ``branching_parents``), its p and q rows."""
    nodes, first_path = zip(*tree_nodes(branching))
    tokens = np.array([0] + [paths[first_path[n], len(nodes[n]) - 1] for n in range(1, len(nodes))])
    tree = round_tree(branching_parents(branching), tokens, p.shape[-1])
    p_nodes = np.stack([p[first_path[n], len(nodes[n])] for n in range(len(nodes))])
    q_nodes = np.stack([q[first_path[n], len(nodes[n])] for n in range(tree.num_internal)])
    return tree, p_nodes, q_nodes
