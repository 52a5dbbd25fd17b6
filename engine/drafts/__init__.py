"""Draft models q: the `Draft` interface and its implementations."""

from engine.drafts.base import Draft
from engine.drafts.early_exit import EarlyExitDraft, decoder_view
from engine.drafts.trained import TrainedDraft, default_draft

__all__ = ["Draft", "EarlyExitDraft", "TrainedDraft", "decoder_view", "default_draft"]
