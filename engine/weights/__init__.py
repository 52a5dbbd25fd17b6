"""Committed model weights (package data): ``draft.safetensors``, the trained default draft."""
