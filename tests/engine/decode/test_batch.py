"""`BatchDecoder` is the decoding loop's rule, batched: a batch of one decodes what `Decoder` decodes, token for
token (same seed), over every kind of verification the loop has, chains and trees, two prompt lengths and
the drafts the sequence-level exactness runs use (tests/engine/decode/test_sequence_exactness.py)."""

from __future__ import annotations

import pytest
import torch

from resispec.engine.decode.batch import BatchDecoder
from resispec.engine.decode.decoding import Decoder
from resispec.engine.decode.processing import Sampling
from resispec.engine.drafts.ngram import NGramDraft
from resispec.engine.drafts.self_draft import SelfDraft
from resispec.engine.model.tiny import tiny_llama
from resispec.engine.runtime.tree_lm import TreeLM

PROMPTS = (torch.tensor([3]), torch.tensor([3, 1, 4]))


@pytest.fixture(scope="module")
def models():
    return tiny_llama(2), tiny_llama(5, num_layers=1)


@pytest.mark.parametrize("verifier, branching, scheme", [
    ("ar", (1,), None),
    ("sps", (1, 1, 1), None),  # the chain part only: batched sps
    ("resispec", (1, 3), None),  # a chain part, then node-by-node verification
    ("resispec", (3, 2), None),  # i.i.d. trees: equal siblings share rows
    ("rrs_wor", (3, 2), None),
    ("topk", (2, 2), None),
    ("traversal", (3, 2), None),  # a sequence-level round verifier
    ("block", (1, 1, 1), None),
    ("pooled", (3, 2), "int8"),  # a self-draft (prompt of one token: no prompt cache to share)
    ("resispec_paper", (2, 2), None),  # a control runs through the same loop
])
def test_a_batch_of_one_decodes_what_the_decoder_decodes(models, verifier, branching, scheme):
    target, draft = models
    prompts = PROMPTS[:1] if scheme else PROMPTS
    for seed in range(6):
        prompt = prompts[seed % len(prompts)]
        q = (lambda: SelfDraft(draft, scheme)) if scheme else (lambda: TreeLM(draft))
        expected = list(Decoder(target, q(), verifier, branching, Sampling(1.0), seed=seed).generate(prompt, 7))
        batch = BatchDecoder(target, q(), verifier, branching, Sampling(1.0), seed=seed).generate(prompt, 7, 1)
        assert batch.shape == (1, 7) and batch[0].tolist() == expected, (verifier, branching, seed)


@pytest.mark.parametrize("verifier, branching", [("rrs", (2, 1)), ("sps", (1, 1))])
def test_a_batch_of_one_with_the_ngram_draft_decodes_what_the_decoder_decodes(models, verifier, branching):
    """The n-gram draft declines the rounds without a recurring suffix (one-token rounds) in both loops alike."""
    target, _ = models
    declined = 0
    for seed in range(6):
        prompt = PROMPTS[seed % len(PROMPTS)]
        decoder = Decoder(target, NGramDraft(8, 3, 1), verifier, branching, Sampling(1.0), seed=seed)
        expected = list(decoder.generate(prompt, 9))
        batch = BatchDecoder(target, NGramDraft(8, 3, 1), verifier, branching, Sampling(1.0), seed=seed)
        assert batch.generate(prompt, 9, 1)[0].tolist() == expected, (verifier, seed)
        declined += decoder.stats.draft_forwards < len(branching) * decoder.stats.target_forwards
    assert declined  # some decodes had one-token rounds


def test_sequences_of_a_batch_are_generated_independently(models):
    """Sequence s of a batch is not a copy of another: 64 sequences of 5 tokens from a vocabulary of 8."""
    target, draft = models
    tokens = BatchDecoder(target, TreeLM(draft), "resispec", (3, 2), Sampling(1.0), seed=0).generate(
        PROMPTS[0], 5, 64)
    assert tokens.shape == (64, 5) and len({tuple(row) for row in tokens.tolist()}) > 48


def test_bad_arguments_are_named(models):
    target, draft = models
    with pytest.raises(ValueError, match="draft: a batch needs a TreeCacheLM"):
        BatchDecoder(target, None, "resispec", (2,))
    with pytest.raises(ValueError, match="sequences"):
        BatchDecoder(target, TreeLM(draft), "resispec", (2,)).generate(PROMPTS[0], 3, 0)
