"""Drafts by name, for the CLI and benchmarks: ``default`` (the engine's default draft), ``trained`` (the
distilled draft, `TrainedDraft`), ``early-exit`` (``early-exit-L`` picks the depth L)."""

from __future__ import annotations

import re

from transformers import PreTrainedModel

from engine.drafts.base import Draft
from engine.drafts.early_exit import DEFAULT_EARLY_EXIT_LAYERS, EarlyExitDraft
from engine.drafts.trained import TrainedDraft, default_draft

DEFAULT_DRAFT = "default"
DRAFT_NAMES = ("default", "trained", "early-exit", "early-exit-L")


def make_draft(name: str, target: PreTrainedModel) -> Draft:
    """The draft called ``name`` for the real target model ``target``."""
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
    raise ValueError(f"draft: unknown draft {name!r}; known: {', '.join(DRAFT_NAMES)}")
