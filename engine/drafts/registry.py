"""Drafts by name, for the CLI and benchmarks: ``default`` (the engine's default draft), ``trained`` (the
distilled draft, `TrainedDraft`), ``early-exit`` (``early-exit-L`` picks the depth L), or the path of a
local causal LM on the target's tokenizer (directory or GGUF file, `engine.checkpoints`)."""

from __future__ import annotations

import re
from pathlib import Path

from transformers import PreTrainedModel

from engine.checkpoints import load_draft_model
from engine.drafts.base import Draft
from engine.drafts.early_exit import DEFAULT_EARLY_EXIT_LAYERS, EarlyExitDraft
from engine.drafts.trained import TrainedDraft, default_draft
from engine.tree_lm import TreeLM

DEFAULT_DRAFT = "default"
DRAFT_NAMES = ("default", "trained", "early-exit", "early-exit-L", "PATH")


def make_draft(name: str, target: PreTrainedModel) -> Draft:
    """The draft called ``name`` for the real target model ``target``; any other ``name`` that is an
    existing path loads that checkpoint as a `TreeLM`."""
    if name == "default":
        return default_draft(target)
    if name == "trained":
        return TrainedDraft(target)
    match = re.fullmatch(r"early-exit(?:-(\d+))?", name)
    if match:
        layers = int(match.group(1) or DEFAULT_EARLY_EXIT_LAYERS)
        total = target.config.num_hidden_layers
        if not 1 <= layers < total:
            raise ValueError(f"draft: early-exit depth must be in [1, {total - 1}], got {layers}")
        return EarlyExitDraft(target, layers)
    if Path(name).expanduser().exists():
        return TreeLM(load_draft_model(name, target))
    raise ValueError(f"draft: unknown draft {name!r}; known: {', '.join(DRAFT_NAMES)}")
