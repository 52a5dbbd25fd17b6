"""Shared fixtures for the engine tests: thread cap, tiny random models, the real target (when installed)."""

from __future__ import annotations

import pytest
import torch

from engine.model.tiny import tiny_pair

torch.set_num_threads(min(2, torch.get_num_threads()))


@pytest.fixture(scope="session")
def tiny_models():
    """(p_model, q_model): tiny random target (2 layers) and draft (1 layer), vocab 8."""
    return tiny_pair(seed=0)


@pytest.fixture(scope="session")
def real_target():
    """(model, tokenizer) of the real target; the first run ever dequantizes the GGUF (~15 s), then cached."""
    from engine.model.models import load_target

    return load_target()
