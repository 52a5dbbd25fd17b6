"""Quantized self-drafts: q = the target's own network in int8 or bfloat16 (`engine.quantize`).

Built at load time from the target's weights; nothing is stored. On this CPU the int8 copy agrees with
the float32 target on about 0.96 of the mass per token (``sum_x min(p, q)`` at T = 1) and the bfloat16
copy on about 0.98 (docs/draft.md), for a fraction of a float32 forward.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from torch import nn
from transformers import PreTrainedModel

from engine.compact_lm import CompactLM
from engine.quantize import int8_supported, quantized_copy


class SelfDraft(CompactLM):
    """A quantized copy of the target as a `Draft`; ``model`` is the copy (a transformers causal LM, usable
    as transformers' ``assistant_model``).

    Args:
        target: the target model p.
        scheme: ``int8`` (CPU) or ``bf16``.
    """

    def __init__(self, target: PreTrainedModel, scheme: str) -> None:
        self.scheme = scheme
        copies = _COPIES.setdefault(target, {})
        if scheme not in copies:
            copies[scheme] = quantized_copy(target, scheme)
        super().__init__(copies[scheme])


_COPIES: WeakKeyDictionary[nn.Module, dict[str, PreTrainedModel]] = WeakKeyDictionary()
"""Quantized copies by target and scheme, built once per target (each `SelfDraft` has its own KV cache)."""


def default_self_draft_scheme(target: PreTrainedModel) -> str:
    """``int8`` where its kernel runs (CPU), else ``bf16``."""
    return "int8" if int8_supported(target.device) else "bf16"
