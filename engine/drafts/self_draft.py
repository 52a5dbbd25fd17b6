"""Quantized self-drafts: q = the target's own network in int4, int8 or bfloat16 (`resispec.engine.model.quantize`).

Built at load time from the target's weights; nothing is stored. On this CPU the int4 and int8 copies
agree with the float32 target on about 0.96-0.97 of the mass per token (``sum_x min(p, q)`` at T = 1) and
the bfloat16 copy on about 0.98 (docs/draft.md); int4 reads the fewest bytes per token, so it is the
fastest (a memory-bound forward).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from torch import nn

from resispec.engine.model.quantize import integer_kernels_run_on, quantized_copy
from resispec.engine.runtime.compact_lm import CompactLM

if TYPE_CHECKING:
    from transformers import PreTrainedModel


class SelfDraft(CompactLM):
    """A quantized copy of the target as a `Draft`; ``model`` is the copy (a transformers causal LM, usable
    as transformers' ``assistant_model``).

    Args:
        target: the target model p.
        scheme: ``int4`` or ``int8`` (CPU), or ``bf16``.

    The decoding loop starts it on its own target's prompt cache (`CompactLM.prefill_from`, where
    `shares_prompt_cache_with` says so): q at every position is then the quantized network over the
    float32 target's keys and values of the prompt and its own of the generated tokens. Any q computed
    before its candidates are drawn keeps the verification exact; this one costs no prefill forward.
    """

    def __init__(self, target: PreTrainedModel, scheme: str) -> None:
        self.scheme = scheme
        self.source = target
        copies = _COPIES.setdefault(target, {})
        if scheme not in copies:
            copies[scheme] = quantized_copy(target, scheme)
        super().__init__(copies[scheme])


_COPIES: WeakKeyDictionary[nn.Module, dict[str, PreTrainedModel]] = WeakKeyDictionary()
"""Quantized copies by target and scheme, built once per target (each `SelfDraft` has its own KV cache)."""


def default_self_draft_scheme(target: PreTrainedModel) -> str:
    """``int4`` where its kernel runs (CPU), else ``bf16``."""
    return "int4" if integer_kernels_run_on(target.device) else "bf16"
