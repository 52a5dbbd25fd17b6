"""Drafts by name, for the CLI and benchmarks: ``default`` (``int4`` on CPU, ``bf16`` elsewhere), ``int4``,
``int8`` and ``bf16`` (quantized self-drafts, `SelfDraft`), ``trained`` (the distilled draft, `TrainedDraft`),
``early-exit`` (``early-exit-L`` picks the depth L), or the path of a local causal LM on the target's
tokenizer (directory or GGUF file, `engine.model.checkpoints`). Every draft exposes ``model``, a transformers
causal LM (usable as transformers' ``assistant_model``)."""

from __future__ import annotations

import re
from pathlib import Path

from transformers import PreTrainedModel

from engine.drafts.base import Draft
from engine.drafts.early_exit import DEFAULT_EARLY_EXIT_LAYERS, EarlyExitDraft
from engine.drafts.self_draft import SelfDraft, default_self_draft_scheme
from engine.drafts.trained import TrainedDraft
from engine.model.checkpoints import load_draft_model
from engine.model.quantize import SCHEMES
from engine.runtime.compact_lm import lm_for

DEFAULT_DRAFT = "default"
DRAFT_NAMES = ("default", "int4", "int8", "bf16", "trained", "early-exit", "early-exit-L")
"""Every draft name ``make_draft`` knows; a trailing ``-L`` stands for a positive integer (a depth). Any
existing path is a draft too (a local checkpoint)."""


def check_draft_name(name: str) -> str:
    """``name`` if it matches an entry of ``DRAFT_NAMES`` (``-L`` = a positive integer) or is an existing
    path, else a ``ValueError`` listing them. Cheap: loads no model, so the CLI checks ``--draft`` before
    loading the target; the depth's upper bound (the target's layer count) is checked by ``make_draft``."""
    for known in DRAFT_NAMES:
        pattern = re.escape(known[:-1]) + r"[1-9]\d*" if known.endswith("-L") else re.escape(known)
        if isinstance(name, str) and re.fullmatch(pattern, name):
            return name
    if isinstance(name, str) and name and Path(name).expanduser().exists():
        return name
    raise ValueError(f"draft: unknown draft {name!r}; known: {', '.join(DRAFT_NAMES)} (L = a layer count >= 1) "
                     "or the path of a local checkpoint")


def resolve_draft_name(name: str, target: PreTrainedModel) -> str:
    """The concrete draft ``name`` stands for (``default`` -> ``int4`` on CPU, ``bf16`` elsewhere)."""
    return default_self_draft_scheme(target) if name == DEFAULT_DRAFT else name


def make_draft(name: str, target: PreTrainedModel) -> Draft:
    """The draft called ``name`` for the real target model ``target``; any other ``name`` that is an
    existing path loads that checkpoint (through `CompactLM` where it applies)."""
    name = resolve_draft_name(check_draft_name(name), target)
    if name in SCHEMES:
        return SelfDraft(target, name)
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
        return lm_for(load_draft_model(name, target))
    raise ValueError(f"draft: unknown draft {name!r}; known: {', '.join(DRAFT_NAMES)}")
