"""Draft models q: the `Draft` interface and its implementations."""

from engine.drafts.base import Draft
from engine.drafts.early_exit import EarlyExitDraft, decoder_view
from engine.drafts.layer_skip import LayerSkipDraft
from engine.drafts.ngram import NGramDraft
from engine.drafts.self_draft import SelfDraft
from engine.drafts.trained import TrainedDraft

__all__ = ["Draft", "EarlyExitDraft", "LayerSkipDraft", "NGramDraft", "SelfDraft", "TrainedDraft", "decoder_view"]
