"""The prompt-lookup n-gram draft: q from the context itself, no model (as llama.cpp's lookup decoding,
vLLM's n-gram proposer and transformers' ``prompt_lookup_num_tokens`` do).

At a node whose context (prompt, generated tokens, then the node's tree path) is ``c = c_1 .. c_t``, take the
longest suffix ``s = c_{t-n+1} .. c_t`` with ``min_n <= n <= max_n`` that also occurs earlier in ``c`` followed
by a token, and let ``count(x)`` be how often x follows those earlier occurrences. q is their empirical law,
with every other token a fixed ``GAP`` below in logit (so q has full support, as without-replacement drafting
needs, and a deterministic proposal is q one-hot up to ``e^-GAP`` per token):

    logit(x) = log count(x)       if count(x) > 0,
    logit(x) = log max count - GAP  otherwise.

Longest first: along a drafted chain the suffix grows with the path, so the chain keeps following the same
earlier occurrence (the continuation llama.cpp and vLLM copy).

**No match.** Where no suffix of length >= ``min_n`` recurs, the draft *proposes nothing*: `proposes(context)`
is false and the decoding loop makes that round a one-token round (p sampled at the root, no tree; a tree of
depth 0). Below the root, a node with no match gets q uniform over the vocabulary (all logits equal): the
tree's shape is fixed per round, and any q drawn from keeps the law exact. Whether a round drafts is a function
of the context alone, decided before any candidate is drawn, so each emitted token is still distributed as p at
its node (the loop's per-node argument, engine/decode/decoding.py).

It is a `TreeCacheLM` whose "cache" is the token id of every entry: a row's context is the tokens of the entries
it attends to (``allowed``), in cache order, which is position order for the loop's trees and for
`resispec.engine.runtime.forest.ForestLM`'s many sequences alike, so both loops run it unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from resispec.engine.runtime.tree_lm import TreeCacheLM

GAP = 40.0
"""Logit gap between a token seen after a match and one never seen: e^-40 ~ 4e-18 of mass each at T = 1."""
DEFAULT_MAX_N = 4
DEFAULT_MIN_N = 2


@dataclass(frozen=True)
class _Vocabulary:
    """The two attributes `TreeCacheLM` reads from a model: ``config.vocab_size`` and ``device``."""

    config: object
    device: torch.device


@dataclass(frozen=True)
class _Config:
    vocab_size: int


def continuation_counts(context: Sequence[int] | np.ndarray, max_n: int, min_n: int) -> dict[int, int] | None:
    """How often each token follows the earlier occurrences of the longest suffix of ``context`` (length n,
    ``max_n >= n >= min_n``) that recurs followed by a token; None when none recurs (module docstring)."""
    c = np.asarray(context, dtype=np.int64)
    t = len(c)
    for n in range(min(max_n, t - 1), min_n - 1, -1):
        suffix = c[t - n:]
        # windows c[j : j + n] for j + n <= t - 1, i.e. followed by the token c[j + n] inside the context
        windows = np.lib.stride_tricks.sliding_window_view(c[: t - 1], n)
        starts = np.flatnonzero((windows == suffix).all(axis=1))
        if len(starts):
            tokens, counts = np.unique(c[starts + n], return_counts=True)
            return dict(zip(tokens.tolist(), counts.tolist()))
    return None


class NGramDraft(TreeCacheLM):
    """The prompt-lookup draft q of the module docstring, for a vocabulary of ``vocab_size`` tokens.

    Args:
        vocab_size: V, the target's vocabulary.
        max_n, min_n: the longest and shortest suffix matched (``max_n >= min_n >= 1``).
        device: where its logits go (the target's device).
    """

    assistant_model = None
    """No model computes this draft."""

    def __init__(self, vocab_size: int, max_n: int = DEFAULT_MAX_N, min_n: int = DEFAULT_MIN_N,
                 device: torch.device | str = "cpu") -> None:
        if not 1 <= min_n <= max_n:
            raise ValueError(f"ngram: need 1 <= min_n <= max_n, got min_n={min_n}, max_n={max_n}")
        self.max_n, self.min_n = max_n, min_n
        super().__init__(_Vocabulary(_Config(vocab_size), torch.device(device)))

    def proposes(self, context: Sequence[int]) -> bool:
        """Whether a round at the end of ``context`` (prompt + emitted tokens, the root last) drafts a tree."""
        return continuation_counts(context, self.max_n, self.min_n) is not None

    def q_logits(self, context: Sequence[int]) -> torch.Tensor:
        """q's logits (float32 [V]) after ``context`` (module docstring)."""
        logits = torch.zeros(self.vocab_size)
        counts = continuation_counts(context, self.max_n, self.min_n)
        if counts is not None:
            logits.fill_(float(np.log(max(counts.values()))) - GAP)
            logits[list(counts)] = torch.tensor(np.log(list(counts.values())), dtype=torch.float32)
        return logits

    def _reset_cache(self) -> None:
        self._tokens: list[int] = []

    def _run(self, input_ids: torch.Tensor, positions: torch.Tensor, allowed: torch.Tensor,
             first_logits: int = 0) -> torch.Tensor:
        self._tokens += input_ids.tolist()
        entries = np.asarray(self._tokens)
        rows = [self.q_logits(entries[row.cpu().numpy()]) for row in allowed[first_logits:]]
        if not rows:
            return torch.empty(0, self.model.config.vocab_size, device=self.model.device)
        return torch.stack(rows).to(self.model.device)

    def _keep_entries(self, prefix_len: int, keep: list[int]) -> None:
        self._tokens = self._tokens[:prefix_len] + [self._tokens[prefix_len + k] for k in keep]
