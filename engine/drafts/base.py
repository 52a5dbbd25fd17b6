"""The `Draft` interface: what the decoding loop asks of a draft model q."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch


@runtime_checkable
class Draft(Protocol):
    """A draft q that keeps its own KV cache of the accepted prefix and grows a candidate tree on top.

    `resispec.engine.runtime.tree_lm.TreeLM` implements it for any transformers causal LM (the tiny random draft is
    ``TreeLM(tiny_llama(seed))``); `EarlyExitDraft` is a `TreeLM` over the target's first layers. Node
    numbering and the round protocol are those of `TreeLM`: node 0 is the last accepted token.
    A draft with a ``shares_prompt_cache_with(target)`` method that returns true (a self-draft of that
    target) is started with ``prefill_from(target, input_ids)`` on the target's prompt cache instead. A draft
    with a ``proposes(context) -> bool`` method (the n-gram draft) declines the rounds where it returns false
    for the context (prompt and emitted tokens, the root last): they are one-token rounds
    (`resispec.engine.decode.decoding.drafts_at`). A draft with an ``observe(states)`` method (the feature draft) is
    handed the target's final-norm states at the accepted positions before each ``commit``.
    """

    vocab_size: int

    def prefill(self, input_ids: torch.Tensor) -> None:
        """Start over on the prompt, long [T]; its last token is the root of the first tree."""

    def grow(self, tokens: torch.Tensor, parents: torch.Tensor) -> torch.Tensor:
        """Add nodes (tokens, parents: long [M]) to the tree; return q's logits after each, float [M, V]."""

    def commit(self, accepted: torch.Tensor) -> None:
        """Accept tokens (long [m], the root's first) after the prefix; drop the rest of the tree."""
