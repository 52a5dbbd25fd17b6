"""Draft models q: the `Draft` interface and its implementations."""

from engine.drafts.base import Draft
from engine.drafts.early_exit import EarlyExitDraft, decoder_view
from engine.drafts.self_draft import SelfDraft
from engine.drafts.trained import TrainedDraft

__all__ = ["Draft", "EarlyExitDraft", "SelfDraft", "TrainedDraft", "decoder_view"]
