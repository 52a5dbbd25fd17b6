"""`ForestLM`: S independent sequences scored by one causal LM in one forward per call, over one shared cache.

Each sequence's accepted prefix and each tree node is an *entry* of one KV cache (the wrapped model's own,
grown by its own ``_run``: `resispec.engine.runtime.compact_lm.CompactLM` or `resispec.engine.runtime.tree_lm.TreeLM`,
the very
forwards the decoding loop runs). Nothing is ever moved or cropped: a new token attends exactly to the entries
of its own sequence's accepted prefix and to its own tree ancestors (itself included), at position
``prefix length + depth``, so its logits are those the sequence alone would get from the single-sequence
`TreeCacheLM` (up to float rounding; the entries of other sequences and of rejected nodes are masked out).

Shapes: a call carries, for each sequence s, its pending tokens (accepted, not cached yet; fed first as a
chain) and its new nodes; rows of one call are ordered by sequence. Entries are ints (cache positions).
Cost: one forward of all rows against all entries so far, so callers bound S (a few hundred) per forest.
"""

from __future__ import annotations

import torch

from resispec.engine.runtime.tree_lm import TreeCacheLM


class ForestLM:
    """S sequences on the forward of ``lm`` (a fresh `TreeCacheLM`, reset here; its own bookkeeping unused).

    Per sequence s: ``prefix[s]`` (cache entries of the accepted prefix, in order), ``pending[s]`` (accepted
    tokens not cached yet), ``trees[s]`` (the entries of its tree nodes since its last commit, in the order
    grown); ``paths`` gives each live tree node's entries from its tree's root down to it.
    """

    def __init__(self, lm: TreeCacheLM, prompt_ids: torch.Tensor, sequences: int) -> None:
        if prompt_ids.ndim != 1 or len(prompt_ids) < 1:
            raise ValueError(f"prompt_ids: must be a non-empty 1D tensor, got shape {tuple(prompt_ids.shape)}")
        lm.reset()
        self.lm = lm
        self.vocab_size = lm.vocab_size
        self.entries = 0
        self.prefix: list[list[int]] = [[] for _ in range(sequences)]
        self.pending: list[list[int]] = [prompt_ids[:-1].tolist() for _ in range(sequences)]
        self.paths: dict[int, list[int]] = {}
        self.trees: list[list[int]] = [[] for _ in range(sequences)]
        if len(prompt_ids) > 1:  # the prompt's entries, computed once and shared by every sequence
            self.grow({0: ([], [])})
            self.prefix = [list(self.prefix[0]) for _ in range(sequences)]
            self.pending = [[] for _ in range(sequences)]

    @torch.no_grad()
    def grow(self, nodes: dict[int, tuple[list[int], list[int]]]) -> torch.Tensor:
        """Feed, in one forward, every listed sequence's pending tokens, then its new tree nodes.

        Args:
            nodes: sequence -> (tokens, parents): the new nodes' token ids and each one's parent as an index
                into the sequence's tree since its last `commit` (these nodes included, as in
                `TreeCacheLM.grow`): -1 for node 0, the root (the last accepted token).

        Returns the new nodes' next-token logits, float [M, V], sequence by sequence in the order given.
        """
        tokens, positions, visible, node_rows = [], [], [], []
        entry = self.entries
        for sequence, (node_tokens, parents) in nodes.items():
            prefix, tree = self.prefix[sequence], self.trees[sequence]
            for token in self.pending[sequence]:  # the pending chain: it joins the prefix
                prefix.append(entry)
                tokens.append(token)
                positions.append(len(prefix) - 1)
                visible.append(list(prefix))
                entry += 1
            self.pending[sequence] = []
            for token, parent in zip(node_tokens, parents):
                if (parent < 0) != (not tree) or parent >= len(tree):
                    raise ValueError(f"parents: node 0 (and only node 0) of sequence {sequence}'s tree has parent -1, "
                                     f"and a parent precedes its child; got {parent} for node {len(tree)}")
                path = [*(self.paths[tree[parent]] if parent >= 0 else []), entry]
                self.paths[entry] = path
                tree.append(entry)
                node_rows.append(len(tokens))
                tokens.append(token)
                positions.append(len(prefix) + len(path) - 1)
                visible.append(prefix + path)
                entry += 1
        allowed = torch.zeros(len(tokens), entry, dtype=torch.bool)
        allowed[[row for row, seen in enumerate(visible) for _ in seen], [e for seen in visible for e in seen]] = True
        device = self.lm.model.device
        logits = self.lm._run(torch.tensor(tokens, device=device), torch.tensor(positions, device=device),
                              allowed.to(device))
        self.entries = entry
        return logits[node_rows]

    def commit(self, sequence: int, path: list[int], unfed: list[int]) -> None:
        """Accept, after ``sequence``'s prefix, its tree nodes ``path`` (tree indices, root first, each the child
        of the one before) followed by the tokens ``unfed`` that were never fed (a leaf a draft did not grow);
        drop the rest of the sequence's tree."""
        tree = self.trees[sequence]
        self.prefix[sequence] += [tree[node] for node in path]
        self.pending[sequence] += unfed
        for entry in tree:
            del self.paths[entry]
        self.trees[sequence] = []
