"""The layer-skip self-draft: q = the target's own network with some of its decoder layers skipped (as in
LayerSkip, arXiv 2404.16710; SWIFT, arXiv 2410.06916; Draft & Verify, arXiv 2309.08168).

    h_0 = E[x];   h <- h + layer_l(h)  for l in the kept layers L (ascending);   q = softmax(RMSNorm(h) W_head^T)

Everything is the target's: the kept layers' fused (and, for the native target, packed int4) weights, the
embedding, the final norm and the head are the very objects the target's `CompactLM` computes with
(`resispec.engine.runtime.compact_lm.prepared_weights`), so nothing is copied. Attention is batched (a draft need not
be row-exact). Its forward costs the kept layers and the head: the early-exit draft (`early_exit`) is the
special case L = {0, ..., k - 1}, which keeps the layers that matter least for the last hidden state.

It starts on the target's prompt cache: the prompt's keys and values at each kept layer are the target's at
that layer (`CompactLM.prefill_from` with ``source_layers``), the generated tokens' its own. Any q computed
before its candidates are drawn keeps the verification exact; this one costs no prefill forward.

Which layers: `resispec.engine.bench.layer_search` measures the one-candidate acceptance ``sum min(p, q)`` and the
forward cost of nested layer sets on target-sampled text of the training prompts and picks the set of the
highest predicted tokens per second; ``DEFAULT_LAYERS`` holds its result for the shipped model (docs/draft.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from resispec.engine.runtime.compact_lm import CompactLM, is_compact_compatible, prepared_weights
from resispec.engine.runtime.tree_lm import TreeCacheLM

if TYPE_CHECKING:
    from transformers import PreTrainedModel

DEFAULT_LAYERS: dict[tuple[str, int], tuple[int, ...]] = {
    ("native", 30): tuple(i for i in range(30) if i != 5),
}
"""The measured layer set of ``layer-skip`` per (target compute, number of the target's layers): the result of
`resispec bench layer-skip` (`resispec.engine.bench.layer_search`) on the shipped SmolLM2-135M, native target (AVX2-only
EPYC, one thread; docs/draft.md): every layer matters (dropping any one costs 0.15-0.96 of the one-candidate
acceptance 0.991), so the best proper subset skips one layer (5: A(1) 0.84) and is still predicted slower than
autoregressive sampling."""


class LayerSkipDraft(CompactLM):
    """The target ``target`` run through its decoder layers ``layers`` only (module docstring).

    Args:
        target: the target model p (a Llama-family model `CompactLM` runs: float32 or native).
        layers: the kept layers' indices, strictly ascending, in ``[0, num_hidden_layers)``.
    """

    assistant_model = None
    """No transformers model computes this draft (its layers keep the target's cache indices)."""

    def __init__(self, target: PreTrainedModel, layers: Sequence[int]) -> None:
        total = target.config.num_hidden_layers
        layers = list(layers)
        if not layers or layers != sorted(set(layers)) or not all(0 <= i < total for i in layers):
            raise ValueError(f"draft: layer-skip layers must be strictly ascending in [0, {total - 1}], got {layers}")
        if not is_compact_compatible(target):
            raise TypeError(f"layer-skip: {type(target).__name__} is not a Llama-family model CompactLM runs")
        self.source = target
        self.source_layers = layers
        self.weights = prepared_weights(target).subset(layers)
        TreeCacheLM.__init__(self, target)
