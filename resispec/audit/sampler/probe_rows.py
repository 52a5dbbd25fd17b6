"""The rows an edge probe runs on: drafts that prefer tokens with ``p = 0`` and ``q > 0``.

At every draft choice the tokens with ``p = 0 < q`` come first (descending q), then the others with ``q > 0``
(descending q); the first k distinct ones are the candidates (valid under i.i.d. and WOR drafting); top-k
drafting keeps its one tuple. Contexts: the suite's pairs with such tokens (``models.ZERO_PAIRS``) for a node,
the ``zeros`` model for chains and trees.
"""

from __future__ import annotations

import numpy as np

from resispec.audit.sampler.drafting import Chooser, DraftedRows, level_rows
from resispec.audit.sampler.models import ZERO_PAIRS, ChainModel, node_contexts
from resispec.drafting import DraftingScheme, top_k_tokens
from resispec.processing import Processing


def probe_chooser(scheme: DraftingScheme) -> Chooser:
    """k candidate ids, those the target forbids first (module doc)."""
    def choose(p: np.ndarray, q: np.ndarray, k: int, where: str) -> np.ndarray:
        if scheme.name == "topk":
            return top_k_tokens(q, k)
        order = np.lexsort((-q, p > 0))
        order = order[q[order] > 0]
        return np.resize(order, k).astype(np.int64)
    return choose


def probe_rows(level: str, processing: Processing, k: int, gamma: int, branching: tuple[int, ...],
               scheme: DraftingScheme, seed: int) -> DraftedRows:
    """Node: one row per zero pair the scheme serves at k; chain, tree: one row of the ``zeros`` model."""
    choose = probe_chooser(scheme)
    if level != "node":
        depth = gamma if level == "chain" else len(branching)
        return level_rows(level, [ChainModel("zeros", processing, seed)], gamma, branching, [np.array([depth])],
                          choose)
    contexts = [c for c in node_contexts(processing, ZERO_PAIRS) if (scheme.max_candidates(c.q) or k) >= k]
    return DraftedRows(np.stack([c.raw_p for c in contexts]), np.stack([c.raw_q for c in contexts]),
                       np.stack([c.p for c in contexts]), np.stack([choose(c.p, c.q, k, c.name) for c in contexts]),
                       np.arange(len(contexts)), np.zeros(len(contexts), dtype=np.int64))
