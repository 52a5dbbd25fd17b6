"""How a target's p is computed, as a model records it: the one fact that the native target
(`engine.model.native`), the quantized self-drafts (`engine.model.quantize`) and the runtime read."""

from __future__ import annotations

from torch import nn

NATIVE = "native"
"""The GGUF's own blocks through integer kernels (`engine.model.native.native_model` sets it)."""


def target_compute_of(model: nn.Module) -> str:
    """``native`` for a model `engine.model.native.native_model` built, ``float32`` (whatever its dtype) otherwise."""
    return getattr(model, "target_compute", "float32")
