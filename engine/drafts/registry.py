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
"""Every draft name ``make_draft`` knows; a trailing ``-L`` stands for a positive integer (a depth)."""


def check_draft_name(name: str) -> str:
    """``name`` if it matches an entry of ``DRAFT_NAMES`` (``-L`` = a positive integer), else a
    ``ValueError`` listing them. Cheap: loads no model, so the CLI checks ``--draft`` before loading
    the target; the depth's upper bound (the target's layer count) is checked by ``make_draft``."""
    for known in DRAFT_NAMES:
        pattern = re.escape(known[:-1]) + r"[1-9]\d*" if known.endswith("-L") else re.escape(known)
        if isinstance(name, str) and re.fullmatch(pattern, name):
            return name
    raise ValueError(f"draft: unknown draft {name!r}; known: {', '.join(DRAFT_NAMES)} (L = a layer count >= 1)")


def make_draft(name: str, target: PreTrainedModel) -> Draft:
    """The draft called ``name`` for the real target model ``target``."""
    check_draft_name(name)
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
