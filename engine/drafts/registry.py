"""Drafts by name, for the CLI and benchmarks: ``default`` (``int4`` on CPU, ``bf16`` elsewhere), ``int4``,
``int8`` and ``bf16`` (quantized self-drafts, `SelfDraft`), ``trained`` (the distilled draft, `TrainedDraft`),
``feature`` (an EAGLE-style head on the target's states, `FeatureDraft`),
``early-exit`` (``early-exit-L`` picks the depth L), ``ngram`` (prompt lookup, no model: `NGramDraft`;
``ngram-N`` matches suffixes of at least N tokens), ``layer-skip`` (the target's own layers, some skipped:
`LayerSkipDraft`; ``layer-skip:0,3,7,...`` names the kept layers), or the path of a local causal LM on the
target's tokenizer (directory or GGUF file, `resispec.engine.model.checkpoints`). `assistant_model(draft)` is the
transformers causal LM that computes a draft (usable as transformers' ``assistant_model``), None for the
n-gram and layer-skip drafts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from resispec.engine.drafts.base import Draft
from resispec.engine.drafts.early_exit import DEFAULT_EARLY_EXIT_LAYERS, EarlyExitDraft
from resispec.engine.drafts.feature_draft import FeatureDraft
from resispec.engine.drafts.layer_skip import DEFAULT_LAYERS, LayerSkipDraft
from resispec.engine.drafts.ngram import DEFAULT_MAX_N, DEFAULT_MIN_N, NGramDraft
from resispec.engine.drafts.self_draft import SelfDraft, default_self_draft_scheme
from resispec.engine.drafts.trained import TrainedDraft
from resispec.engine.model.checkpoints import load_draft_model
from resispec.engine.model.compute import target_compute_of
from resispec.engine.model.quantize import SCHEMES
from resispec.engine.runtime.compact_lm import lm_for

if TYPE_CHECKING:
    from transformers import PreTrainedModel

DEFAULT_DRAFT = "default"
DRAFT_NAMES = ("default", "int4", "int8", "bf16", "trained", "feature", "early-exit", "early-exit-L", "ngram",
               "ngram-N", "layer-skip", "layer-skip:LIST")
"""Every draft name ``make_draft`` knows; a trailing ``-L`` / ``-N`` stands for a positive integer (a depth, a
suffix length), ``LIST`` for comma-separated layer indices (``0,2,5``). Any existing path is a draft too (a
local checkpoint)."""
PARAMETER_PATTERNS = {"-L": r"[1-9]\d*", "-N": r"[1-9]\d*", ":LIST": r"\d+(?:,\d+)*"}
NGRAM_NAME = re.compile(r"ngram(?:-(\d+))?")
"""``ngram`` or ``ngram-N`` (N: the shortest suffix matched)."""


def check_draft_name(name: str) -> str:
    """``name`` if it matches an entry of ``DRAFT_NAMES`` (``-L`` = a positive integer) or is an existing
    path, else a ``ValueError`` listing them. Cheap: loads no model, so the CLI checks ``--draft`` before
    loading the target; the depth's upper bound (the target's layer count) is checked by ``make_draft``."""
    for known in DRAFT_NAMES:
        pattern = re.escape(known)
        for suffix, values in PARAMETER_PATTERNS.items():
            if known.endswith(suffix):
                pattern = re.escape(known.removesuffix(suffix) + suffix[0]) + values
        if isinstance(name, str) and re.fullmatch(pattern, name):
            return name
    if isinstance(name, str) and name and Path(name).expanduser().exists():
        return name
    raise ValueError(f"draft: unknown draft {name!r}; known: {', '.join(DRAFT_NAMES)} (L = a layer count >= 1, "
                     "N = a suffix length >= 1, LIST = kept layer indices such as 0,2,5) or the path of a local "
                     "checkpoint")


def reads_only_target_weights(name: str) -> bool:
    """Whether the draft ``name`` (checked by ``check_draft_name``) reads nothing of the target but its weights
    (the quantized self-drafts, n-gram, layer-skip, feature), so that a `resispec.engine.model.plain_llama.PlainLlama`
    target serves it; the trained, early-exit and checkpoint drafts build transformers models around the
    target's."""
    name = check_draft_name(name)
    return (name in (DEFAULT_DRAFT, "feature", *SCHEMES) or NGRAM_NAME.fullmatch(name) is not None
            or name.startswith("layer-skip"))


def resolve_draft_name(name: str, target: PreTrainedModel) -> str:
    """The concrete draft ``name`` stands for: ``default`` -> ``layer-skip`` for the native target (its cheapest
    draft that drafts everywhere; the ``int4`` self-draft is that target in other arithmetic, as costly as it,
    docs/draft.md), else ``int4`` on CPU and ``bf16`` elsewhere."""
    if name != DEFAULT_DRAFT:
        return name
    return "layer-skip" if target_compute_of(target) == "native" else default_self_draft_scheme(target)


def make_draft(name: str, target: PreTrainedModel) -> Draft:
    """The draft called ``name`` for the real target model ``target``; any other ``name`` that is an
    existing path loads that checkpoint (through `CompactLM` where it applies)."""
    name = resolve_draft_name(check_draft_name(name), target)
    if name in SCHEMES:
        return SelfDraft(target, name)
    if name == "trained":
        return TrainedDraft(target)
    if name == "feature":
        return FeatureDraft(target)
    match = re.fullmatch(r"early-exit(?:-(\d+))?", name)
    if match:
        layers = int(match.group(1) or DEFAULT_EARLY_EXIT_LAYERS)
        total = target.config.num_hidden_layers
        if not 1 <= layers < total:
            raise ValueError(f"draft: early-exit depth must be in [1, {total - 1}], got {layers}")
        return EarlyExitDraft(target, layers)
    match = NGRAM_NAME.fullmatch(name)
    if match:
        shortest = int(match.group(1) or DEFAULT_MIN_N)
        return NGramDraft(target.config.vocab_size, max(shortest, DEFAULT_MAX_N), shortest, target.device)
    if name.startswith("layer-skip"):
        return LayerSkipDraft(target, _kept_layers(name, target))
    if Path(name).expanduser().exists():
        return lm_for(load_draft_model(name, target))
    raise ValueError(f"draft: unknown draft {name!r}; known: {', '.join(DRAFT_NAMES)}")


def _kept_layers(name: str, target: PreTrainedModel) -> list[int]:
    """The layers ``layer-skip:LIST`` names, or the measured set of ``layer-skip`` for this target."""
    if name != "layer-skip":
        return [int(index) for index in name.removeprefix("layer-skip:").split(",")]
    key = (target_compute_of(target), target.config.num_hidden_layers)
    if key not in DEFAULT_LAYERS:
        raise ValueError(f"draft: layer-skip has no measured layer set for a {key[0]} target of {key[1]} layers "
                         f"(measured: {sorted(DEFAULT_LAYERS)}); name the kept layers: layer-skip:0,2,5,...")
    return list(DEFAULT_LAYERS[key])


def assistant_model(draft: Draft) -> PreTrainedModel | None:
    """The transformers causal LM that computes ``draft`` (its ``model``), or None where none does."""
    return getattr(draft, "assistant_model", draft.model)
