"""Draft models q: the `Draft` interface and its implementations."""

from resispec.engine.drafts.base import Draft
from resispec.engine.drafts.early_exit import EarlyExitDraft, decoder_view
from resispec.engine.drafts.layer_skip import LayerSkipDraft
from resispec.engine.drafts.ngram import NGramDraft
from resispec.engine.drafts.self_draft import SelfDraft
from resispec.engine.drafts.trained import TrainedDraft

__all__ = ["Draft", "EarlyExitDraft", "LayerSkipDraft", "NGramDraft", "SelfDraft", "TrainedDraft", "decoder_view"]
