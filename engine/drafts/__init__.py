"""Draft models q: the `Draft` interface and its implementations."""

from engine.drafts.base import Draft
from engine.drafts.early_exit import EarlyExitDraft, decoder_view

__all__ = ["Draft", "EarlyExitDraft", "decoder_view"]
