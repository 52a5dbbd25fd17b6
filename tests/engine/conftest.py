"""Shared fixtures for the engine tests: thread cap, tiny random models, the real target (when installed)."""

from __future__ import annotations

import os

import pytest
import torch

from resispec.engine.model.tiny import tiny_pair

torch.set_num_threads(min(2, torch.get_num_threads()))
SESSION_CACHE = os.environ.get("RESISPEC_CACHE")
"""The resispec cache of the session, read before any test module points it at a temporary folder."""


@pytest.fixture(scope="session")
def tiny_models():
    """(p_model, q_model): tiny random target (2 layers) and draft (1 layer), vocab 8."""
    return tiny_pair(seed=0)


@pytest.fixture(scope="session")
def real_target():
    """(model, tokenizer) of the real target; the first run ever dequantizes the GGUF (~15 s), then cached. Loaded
    from the session's cache even when first asked for inside a module with a cache of its own (the model's
    path names its checkpoint, and the calibration key reads it)."""
    from resispec.engine.model.models import load_target

    with pytest.MonkeyPatch.context() as patch:
        if SESSION_CACHE is None:
            patch.delenv("RESISPEC_CACHE", raising=False)
        else:
            patch.setenv("RESISPEC_CACHE", SESSION_CACHE)
        return load_target()
