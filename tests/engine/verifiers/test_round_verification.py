"""Sequence-level verifiers in the engine: exact round law over the tiny models, greedy = autoregressive
greedy, end-to-end sequence law of the decoding loop, and the chain requirement of block."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from resispec.audit.round_law import exact_round_law
from resispec.cli import main
from resispec.engine.decode.decoding import Decoder
from resispec.engine.decode.processing import Sampling
from resispec.engine.model.tiny import tiny_pair
from resispec.engine.runtime.tree_lm import TreeLM

PROMPT = torch.tensor([1, 4, 2])
BRANCHING = {"block": (1, 1, 1), "traversal": (3, 2, 1), "traversal_wor": (3, 2, 1), "gbv": (3, 1, 1)}


def conditionals(model, prompt: torch.Tensor):
    """``prefix -> p(. | prompt + prefix)`` of a tiny model (float64, cached)."""
    cache: dict[tuple[int, ...], np.ndarray] = {}

    def conditional(prefix: tuple[int, ...]) -> np.ndarray:
        if prefix not in cache:
            ids = torch.tensor([[*prompt.tolist(), *prefix]])
            with torch.no_grad():
                cache[prefix] = torch.softmax(model(ids).logits[0, -1].double(), dim=-1).numpy()
        return cache[prefix]

    return conditional


@pytest.mark.parametrize("name, branching", [("block", (1, 1)), ("traversal", (2, 1)), ("traversal_wor", (2, 1)),
                                             ("resispec", (2, 1)), ("gbv", (3, 1))])
def test_round_law_over_the_tiny_models_is_exact(name, branching):
    target, draft = tiny_pair(seed=1, vocab_size=4)  # vocab 4: 16 x 4 x 4 drafted trees at (2, 1)
    result = exact_round_law(name, conditionals(target, PROMPT[:1]), conditionals(draft, PROMPT[:1]), 4, branching)
    assert result.exact, result.max_error


@pytest.mark.parametrize("verifier", list(BRANCHING))
def test_greedy_sequence_level_output_equals_greedy_decoding(tiny_models, verifier):
    target, draft = tiny_models
    reference = list(Decoder(target, None, "ar", sampling=Sampling(0.0)).generate(PROMPT, 24))
    decoder = Decoder(target, TreeLM(draft), verifier, BRANCHING[verifier], Sampling(0.0), seed=3, audit=True)
    assert list(decoder.generate(PROMPT, 24)) == reference
    assert len(decoder.stats.pit) == 24


def test_block_needs_a_chain_and_rounds_have_no_node_log(tiny_models, capsys):
    target, draft = tiny_models
    with pytest.raises(ValueError, match="tree: block verifies a chain"):
        Decoder(target, TreeLM(draft), "block", (2, 1))
    with pytest.raises(ValueError, match="decides whole rounds"):
        Decoder(target, TreeLM(draft), "traversal", (2, 1), parity_fraction=0.5)
    assert main(["generate", "--prompt", "hi", "--verifier", "block", "--tree", "2,1"]) == 2
    assert capsys.readouterr().err.strip().startswith("resispec generate: error: tree: block verifies a chain")


def test_the_strategy_resolves_the_drafting_verifier_and_the_shapes_once():
    """A sequence-level verifier drafts with the class that declares drafts_rounds for its drafting rule."""
    from resispec.engine.verifiers.strategy import Verification

    assert [Verification.of(name).node.name for name in ("traversal", "traversal_wor", "block")] == \
        ["rrs", "rrs_wor", "rrs"]
    assert Verification.of("block").chains_only and not Verification.of("traversal").chains_only
    assert Verification.of("resispec").round is None and Verification.of("resispec").chain_verifier().name == "sps"
    assert Verification.of("traversal").chain_verifier() is None
    # the pooled optimum runs partial_resolution's rule: the same decisions (tests/engine/decode), less cost
    assert Verification.of("pooled").node.name == "partial_resolution" and Verification.of("pooled").name == "pooled"
    with pytest.raises(ValueError, match="block verifies a chain"):
        Verification.of("block").check_branching((2, 1))
    with pytest.raises(ValueError, match="sps verifies at most 1"):
        Verification.of("sps").check_branching((2,))
