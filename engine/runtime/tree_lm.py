"""`TreeLM`: a causal LM that scores trees of candidate tokens on top of a KV cache of the accepted prefix.

Used on both sides: the target p scores a whole `CandidateTree` in one forward; a draft q grows the same
tree level by level (see `resispec.engine.decode.expand.expand_tree`). State between calls:

- cached prefix: KV entries of ``prefix_len`` accepted tokens;
- pending tokens: accepted tokens not cached yet (fed first, as a causal chain, by the next forward);
- the current tree: nodes grown since the last `commit`, cached after the prefix (and pending tokens).

A round: ``logits = lm.grow(tokens, parents)`` (any number of times, node 0 = the last accepted token),
then ``lm.commit(accepted)`` with the accepted tokens from the root on; the bonus/residual token that
follows them becomes the root of the next tree.
"""

from __future__ import annotations

import torch
from torch import nn

from resispec.engine.runtime.kv import keep_entries
from resispec.engine.runtime.tree import additive_mask, ancestor_matrix, node_depths


class TreeCacheLM:
    """The bookkeeping of a causal LM with a prefix KV cache and a tree of nodes on top.

    Subclasses supply the forward pass and the cache: `_reset_cache`, `_run` (one forward of tokens at
    given positions under a boolean attention pattern, keys/values appended to the cache) and
    `_keep_entries` (cache surgery after a commit).

    Args:
        model: a transformers causal LM with ``config`` and ``device`` (its ``vocab_size`` is q's or p's).
    """

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.vocab_size: int = model.config.vocab_size
        self.reset()

    def _reset_cache(self) -> None:
        raise NotImplementedError

    def _run(self, input_ids: torch.Tensor, positions: torch.Tensor, allowed: torch.Tensor,
             first_logits: int = 0) -> torch.Tensor:
        """Logits float [n - first_logits, V] of ``input_ids`` (long [n]) at ``positions`` (long [n]), for
        the rows from ``first_logits`` on (the rows before it are only cached: a prompt's prefill, pending
        tokens); ``allowed`` bool [n, cached + n]: which cached or new entries each new token attends to."""
        raise NotImplementedError

    def _keep_entries(self, prefix_len: int, keep: list[int]) -> None:
        """Keep cached positions ``[0, prefix_len)`` then ``prefix_len + keep[i]``; drop the rest."""
        raise NotImplementedError

    def prepare(self, fewest: int, most: int) -> None:
        """Get ready for forwards of ``fewest`` to ``most`` rows (`CompactLM` packs its products for them);
        nothing here."""

    def reset(self) -> None:
        """Forget everything: empty cache, no pending tokens, no tree."""
        self._reset_cache()
        self.prefix_len = 0
        self._pending = torch.empty(0, dtype=torch.long, device=self.model.device)
        self._tree_tokens: list[int] = []
        self._tree_parents: list[int] = []

    @property
    def tree_size(self) -> int:
        """Number of tree nodes grown (and cached) since the last `commit`."""
        return len(self._tree_parents)

    def prefill(self, input_ids: torch.Tensor) -> None:
        """Start over on the prompt `input_ids` (long [T], T >= 1): cache all tokens but the last.

        The last token is the root (node 0) of the first tree.
        """
        if input_ids.ndim != 1 or len(input_ids) < 1:
            raise ValueError(f"input_ids must be a non-empty 1D tensor, got shape {tuple(input_ids.shape)}")
        self.reset()
        self._pending = input_ids[:-1].to(self.model.device)
        if len(self._pending):
            self._feed(self._pending[:0], parents=[])

    def grow(self, tokens: torch.Tensor, parents: torch.Tensor) -> torch.Tensor:
        """Add M nodes to the current tree; return their next-token logits, float [M, V].

        Args:
            tokens: long [M], the nodes' token ids.
            parents: long [M], each node's parent as a tree index (nodes are numbered 0, 1, ... in the
                order grown since the last `commit`, these included; a parent precedes its child). -1
                only for node 0, the root: the last accepted token.

        Row i of the result is the model's logits for the token after the root-to-node path of node i.
        All M nodes go through the model in one forward pass on top of the cache.
        """
        if tokens.shape != parents.shape or tokens.ndim != 1 or len(tokens) == 0:
            raise ValueError(
                f"tokens and parents must be 1D, non-empty, of one length; got {tokens.shape}, {parents.shape}"
            )
        all_parents = self._tree_parents + parents.tolist()
        if any(p < 0 for p in all_parents[1:]) or (all_parents and all_parents[0] != -1):
            raise ValueError(f"node 0 (and only node 0) must have parent -1, got parents {all_parents}")
        logits = self._feed(tokens.to(self.model.device), all_parents)
        self._tree_tokens += tokens.tolist()
        self._tree_parents = all_parents
        return logits

    def commit(self, accepted: torch.Tensor) -> None:
        """Accept the tokens `accepted` (long [m]) after the prefix: the root's token first, then the path.

        Tree nodes along the accepted path keep their cache entries; the rest of the tree is dropped.
        Accepted tokens past the grown part of the tree (say a leaf the draft never fed) become pending.
        """
        # Nodes whose paths spell the accepted tokens so far. Equal siblings (i.i.d. drafting) have equal
        # entries, so any deepest match serves; its own root-to-node path is the one kept.
        frontier, depth = [-1], 0
        for token in accepted.tolist():
            children = [
                i for i, (p, t) in enumerate(zip(self._tree_parents, self._tree_tokens)) if p in frontier and t == token
            ]
            if not children:
                break
            frontier, depth = children, depth + 1
        matched = [frontier[0]] if depth else []
        while matched and self._tree_parents[matched[0]] >= 0:
            matched.insert(0, self._tree_parents[matched[0]])
        self._keep_entries(self.prefix_len, matched)
        self.prefix_len += len(matched)
        self._pending = torch.cat([self._pending, accepted[len(matched):].to(self.model.device)])
        self._tree_tokens, self._tree_parents = [], []

    @torch.no_grad()
    def _feed(self, tokens: torch.Tensor, parents: list[int]) -> torch.Tensor:
        """One forward of the pending tokens (a causal chain, then moved into the prefix) followed by the
        newest len(tokens) nodes of the tree `parents` (all nodes so far, the pending tokens imply none
        before these); returns the new nodes' logits, float [len(tokens), V]."""
        pending = self._pending
        num_pending, num_new, num_nodes = len(pending), len(tokens), len(parents)
        context = self.prefix_len + num_pending  # keys every tree node attends to
        allowed = torch.zeros(num_pending + num_new, context + num_nodes, dtype=torch.bool)
        allowed[:num_pending, :context] = torch.ones(num_pending, context, dtype=torch.bool).tril(self.prefix_len)
        allowed[num_pending:, :context] = True
        allowed[num_pending:, context:] = ancestor_matrix(parents)[num_nodes - num_new :]
        positions = torch.cat([
            self.prefix_len + torch.arange(num_pending),
            context + torch.tensor(node_depths(parents)[num_nodes - num_new :], dtype=torch.long),
        ])
        logits = self._run(torch.cat([pending, tokens]), positions.to(self.model.device),
                           allowed.to(self.model.device), first_logits=num_pending)
        self.prefix_len += num_pending
        self._pending = pending[:0]
        return logits


class TreeLM(TreeCacheLM):
    """A transformers causal LM (any architecture) as a `TreeCacheLM`: its own forward and `DynamicCache`.

    Args:
        model: a transformers causal LM (e.g. `LlamaForCausalLM`) taking ``input_ids``, ``position_ids``,
            a 4D additive ``attention_mask`` and a ``cache``, with ``config``, ``device`` and ``dtype``.
    """

    def _reset_cache(self) -> None:
        from transformers import DynamicCache  # here: `CompactLM` (the warm start of generate) needs no transformers

        self._cache = DynamicCache(config=self.model.config)

    def _run(self, input_ids: torch.Tensor, positions: torch.Tensor, allowed: torch.Tensor,
             first_logits: int = 0) -> torch.Tensor:
        out = self.model(input_ids=input_ids[None], position_ids=positions[None],
                         attention_mask=additive_mask(allowed, self.model.dtype), cache=self._cache, use_cache=True)
        return out.logits[0, first_logits:]

    def _keep_entries(self, prefix_len: int, keep: list[int]) -> None:
        keep_entries(self._cache, prefix_len, keep)
