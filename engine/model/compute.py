"""How a target's p is computed, as a model records it (its compute and its head): the facts that the native target
(`resispec.engine.model.native`), the quantized self-drafts (`resispec.engine.model.quantize`) and the runtime read."""

from __future__ import annotations

from torch import nn

NATIVE = "native"
"""The GGUF's own blocks through integer kernels (`resispec.engine.model.native.native_model` sets it)."""


def target_compute_of(model: nn.Module) -> str:
    """``native`` for a model `resispec.engine.model.native.native_model` built, ``float32`` (whatever its dtype)
    otherwise."""
    return getattr(model, "target_compute", "float32")


def native_head_of(model: nn.Module) -> str:
    """How ``model``'s head is computed: ``q8_0`` for a native target built with the file's Q8_0 head,
    ``float32`` otherwise (`resispec.engine.model.native.native_model` sets it)."""
    return getattr(model, "native_head", "float32")
