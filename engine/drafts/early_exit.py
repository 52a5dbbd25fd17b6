"""The early-exit draft: the target's own first L layers, final norm and head (no training, weak)."""

from __future__ import annotations

import copy
import shutil
import tempfile
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn

from resispec.engine.runtime.tree_lm import TreeLM

if TYPE_CHECKING:
    from transformers import PreTrainedModel

DEFAULT_EARLY_EXIT_LAYERS = 6
"""Depth of the early-exit draft when none is named (CLI ``early-exit``)."""


def decoder_view(target: PreTrainedModel, layers: Sequence[nn.Module], norm: nn.Module) -> PreTrainedModel:
    """A causal LM of the target's class running `layers` then `norm`, with the target's embedding,
    rotary embedding and head. The modules are shared, not copied: no new weights are allocated.

    Works for Llama-layout models (``model.embed_tokens``, ``model.layers``, ``model.norm``,
    ``model.rotary_emb``, ``lm_head``). The layers' attention modules must carry layer indices
    0..len(layers)-1, which holds for a prefix of the target's layers and for freshly built layers.
    """
    config = copy.deepcopy(target.config)
    config.num_hidden_layers = len(layers)
    with torch.device("meta"):
        view = type(target)(config)
    view.model.embed_tokens = target.model.embed_tokens
    view.model.layers = nn.ModuleList(layers)
    view.model.norm = norm
    view.model.rotary_emb = target.model.rotary_emb
    view.lm_head = target.lm_head
    if any(t.is_meta for t in chain(view.parameters(), view.buffers())):
        raise RuntimeError(f"decoder_view left a module of {type(target).__name__} unshared (still on meta)")
    return view.eval()


class EarlyExitDraft(TreeLM):
    """Draft q = ``lm_head(norm(h_L))``, h_L the target's residual stream after its first `num_layers` layers.

    Shares every weight with `target`; its forward costs about ``num_layers / num_hidden_layers`` of the
    target's, plus the head (sizeable for a small model with a large vocabulary).
    """

    def __init__(self, target: PreTrainedModel, num_layers: int) -> None:
        total = target.config.num_hidden_layers
        if not 1 <= num_layers <= total:
            raise ValueError(f"num_layers must be in [1, {total}], got {num_layers}")
        self.num_layers = num_layers
        super().__init__(decoder_view(target, target.model.layers[:num_layers], target.model.norm))


def early_exit_checkpoint(num_layers: int = DEFAULT_EARLY_EXIT_LAYERS) -> Path:
    """A plain float32 checkpoint of the built-in target's early-exit draft (its first ``num_layers`` layers, final
    norm and head: `decoder_view`) beside the target's cached checkpoint, for loaders outside the engine (vLLM's
    draft-model proposer: docs/vllm.md). Written once into a staging sibling and renamed into place."""
    from resispec.engine.model.gguf import ensure_checkpoint, target_gguf_path
    from resispec.engine.model.models import load_target

    folder = ensure_checkpoint(target_gguf_path())
    destination = folder.with_name(f"{folder.name}-early-exit-{num_layers}")
    if (destination / "model.safetensors").is_file():
        return destination
    target, tokenizer = load_target()
    total = target.config.num_hidden_layers
    if not 1 <= num_layers <= total:
        raise ValueError(f"num_layers must be in [1, {total}], got {num_layers}")
    draft = decoder_view(target, target.model.layers[:num_layers], target.model.norm)
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
    try:
        draft.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        staging.rename(destination)
    except OSError:
        if not (destination / "model.safetensors").is_file():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return destination
