"""The engine decodes the same tokens for the same seed as before the verifiers' rules were written once.

``decoded_tokens.json`` holds the tokens main decoded (commit 6d12b60, when every verifier had a torch
twin) with the tiny models (vocabularies 8 and 64), every verifier, sampling at temperature 1, seeds 1
and 2: 24 tokens after the prompt [1, 3], tree (3, 2) ((1, 1, 1) for sps). A rule that moved by an ulp
at a decision, or a changed random stream, changes them. ``partial_resolution`` (added later, pooled's rule
with its pools resolved per tuple) is recorded with exactly pooled's tokens (the test below checks that
too), its control ``partial_resolution_unpooled`` with what it decoded when added.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from resispec import VERIFIERS
from resispec.engine.decode.decoding import Decoder
from resispec.engine.decode.processing import Sampling
from resispec.engine.model.tiny import tiny_pair
from resispec.engine.runtime.tree_lm import TreeLM

RECORDED = json.loads((Path(__file__).parent / "decoded_tokens.json").read_text())


@pytest.mark.parametrize("vocab", [8, 64])
@pytest.mark.parametrize("name", list(VERIFIERS))
def test_the_same_seed_decodes_the_recorded_tokens(name, vocab):
    target, draft = tiny_pair(seed=0, vocab_size=vocab)
    branching = (1, 1, 1) if VERIFIERS[name].max_k == 1 else (3, 2)
    for seed in (1, 2):
        decoder = Decoder(target, TreeLM(draft), name, branching, Sampling(1.0), seed=seed)
        assert [int(t) for t in decoder.generate(torch.tensor([1, 3]), 24)] == RECORDED[f"{vocab}/{name}/{seed}"]


@pytest.mark.parametrize("vocab", [8, 64])
def test_partial_resolution_decodes_pooleds_tokens(vocab):
    for seed in (1, 2):
        assert RECORDED[f"{vocab}/partial_resolution/{seed}"] == RECORDED[f"{vocab}/pooled/{seed}"]
