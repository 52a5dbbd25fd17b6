"""The trained draft: a few decoder layers of its own between the target's embedding and head.

q = ``lm_head(norm'(L'_k(... L'_1(embed(x)))))``: the embedding, rotary embedding and output head are the
target's (shared at run time, never stored), the k layers L' and the final norm' are the draft's own,
initialised from copies of some target layers and distilled from the target (`resispec.engine.train.train_draft`).
The committed weights (`WEIGHTS_PATH`, half precision, layers and norm only) load as the target's dtype.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torch import nn

from resispec.engine.drafts.early_exit import decoder_view
from resispec.engine.runtime.tree_lm import TreeLM
from resispec.formats.atomic import atomic_path

if TYPE_CHECKING:
    from transformers import PreTrainedModel

WEIGHTS_DIR = Path(__file__).resolve().parent.parent / "weights"
WEIGHTS_PATH = WEIGHTS_DIR / "draft.safetensors"


class DraftLayers(nn.Module):
    """The draft's own weights: `layers` (decoder layers of the target's class, attention indices
    0..k-1) and the final `norm`. Built from copies of target layers `init_from` (and the target's final
    norm), so that before any training the draft is the target with all other layers skipped; with
    ``copy_weights=False`` the layers keep their fresh initialisation, for a caller that loads its own weights
    next (`TrainedDraft`: also on the native target, whose layers hold packed 4-bit blocks, not float weights)."""

    def __init__(self, target: PreTrainedModel, init_from: Sequence[int], copy_weights: bool = True) -> None:
        super().__init__()
        total = target.config.num_hidden_layers
        if not init_from or any(not 0 <= j < total for j in init_from):
            raise ValueError(f"init_from must be non-empty layer indices in [0, {total}), got {list(init_from)}")
        config = copy.deepcopy(target.config)
        config.num_hidden_layers = len(init_from)
        layer_class = type(target.model.layers[0])
        self.layers = nn.ModuleList()
        for i, j in enumerate(init_from):
            layer = layer_class(config, layer_idx=i).to(device=target.device, dtype=target.dtype)
            if copy_weights:
                layer.load_state_dict(target.model.layers[j].state_dict())
            self.layers.append(layer)
        self.norm = copy.deepcopy(target.model.norm)
        self.requires_grad_(True)

    def view(self, target: PreTrainedModel) -> PreTrainedModel:
        """The draft as a causal LM sharing the target's embedding and head (`decoder_view`)."""
        return decoder_view(target, self.layers, self.norm)


def save_draft(own: nn.Module, meta: dict, path: Path) -> None:
    """Write `own`'s weights (a draft's own module: `DraftLayers`, the feature draft's `FeatureHead`) as float16
    safetensors at `path` (metadata: `meta` as JSON, under "draft"); integer buffers keep their type."""
    tensors = {name: (t.detach().to(torch.float16) if t.is_floating_point() else t.detach()).contiguous()
               for name, t in own.state_dict().items()}
    if not all(torch.isfinite(t).all() for t in tensors.values()):
        raise ValueError("draft weights overflow float16")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as staging:  # never half-written
        save_file(tensors, staging, metadata={"draft": json.dumps(meta)})


def read_draft_meta(path: Path) -> dict:
    """The metadata `save_draft` stored in the header of `path` (no tensors are read)."""
    with safe_open(path, framework="pt") as handle:
        return json.loads(handle.metadata()["draft"])


def fits(meta: dict, target: PreTrainedModel) -> bool:
    """Whether weights described by `meta` fit `target` (model type, width, vocabulary, layer count)."""
    config = target.config
    return (
        meta.get("model_type") == config.model_type
        and meta.get("hidden_size") == config.hidden_size
        and meta.get("vocab_size") == config.vocab_size
        and all(0 <= j < config.num_hidden_layers for j in meta.get("init_from", [-1]))
    )


class TrainedDraft(TreeLM):
    """The distilled draft q over the target's embedding and head, as a `Draft` (a `TreeLM`).

    Args:
        target: the target model p whose embedding, rotary embedding and head are shared.
        path: safetensors written by `save_draft` (default: the committed `WEIGHTS_PATH`).
    """

    def __init__(self, target: PreTrainedModel, path: Path = WEIGHTS_PATH) -> None:
        meta = read_draft_meta(path)
        if not fits(meta, target):
            raise ValueError(f"draft weights {path} ({meta}) do not fit target {target.config.model_type}")
        own = DraftLayers(target, meta["init_from"], copy_weights=False)  # every weight is loaded just below
        own.load_state_dict({k: v.to(target.dtype) for k, v in load_file(path, device=str(target.device)).items()})
        own.requires_grad_(False)
        self.meta = meta
        self.own = own
        super().__init__(own.view(target))
