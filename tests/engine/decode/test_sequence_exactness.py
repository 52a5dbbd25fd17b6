"""Sequence-level exactness of the decoding loop on a tiny random model pair (vocab 8).

The generations run in batches (`resispec.engine.decode.batch.BatchDecoder`: the loop's rule, many independent
generations per forward and per verification call; tests/engine/decode/test_batch.py pins that a batch of
one decodes what `Decoder` decodes, token for token).

The joint law of the first three generated tokens under speculative decoding with a tree must equal
the target's autoregressive law ``p(x1) p(x2 | x1) p(x3 | x1, x2)``, computed exactly from the target.
Chi-square over the 512 cells (sparse cells merged): every exact verifier passes at a Bonferroni
level, every known-biased control is rejected, from 6000 generations (at 1500 rrs_skip_dup was rejected for
2 seeds of 6 only; at 3000 for all 6, p <= 3e-4). The pair, temperature and tree were picked so that each
control's bias at the first node is at least 0.08 in total variation.
"""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
import torch

from resispec import VERIFIERS
from resispec.audit.goodness_of_fit import merged_chi_square
from resispec.engine.decode.adaptive import OnlineShapes
from resispec.engine.decode.batch import BatchDecoder
from resispec.engine.decode.calibration import COST_POINTS, DRAFT_COST_POINTS, Calibration
from resispec.engine.decode.decoding import Decoder
from resispec.engine.decode.processing import Sampling
from resispec.engine.drafts.feature_draft import FeatureDraft, FeatureHead
from resispec.engine.drafts.layer_skip import LayerSkipDraft
from resispec.engine.drafts.ngram import NGramDraft
from resispec.engine.drafts.self_draft import SelfDraft
from resispec.engine.drafts.trained import save_draft
from resispec.engine.model.tiny import tiny_llama
from resispec.engine.runtime.tree_lm import TreeCacheLM, TreeLM
from resispec.sequence import SEQUENCE_VERIFIERS

PROMPT = torch.tensor([3])
VOCAB, LENGTH, SAMPLES = 8, 3, 1500
CONTROL_SAMPLES = 6000
BATCH = 200  # generations per forward: the forward's cost grows with the batch squared (resispec.engine.runtime.forest)
EXACT = [name for name, cls in VERIFIERS.items() if cls.claims_exact]  # the engine decodes with every rule
EXACT += ["traversal"]  # a whole-round verifier (block and the lifts share its hook in the loop)
CONTROLS = [name for name, cls in VERIFIERS.items() if not cls.claims_exact]
LEVEL = 0.01 / len(EXACT)
pytestmark = pytest.mark.slow  # the sequence-level tier (tests/conftest.py)


@pytest.fixture(scope="module")
def models():
    torch.set_num_threads(1)
    return tiny_llama(2), tiny_llama(5, num_layers=1)


@pytest.fixture(scope="module")
def target_law(models):
    """``p(x1, x2, x3)`` over the 512 sequences, from the target's own next-token distributions."""
    target, _ = models
    law = np.ones(VOCAB**LENGTH)
    with torch.no_grad():
        for prefix_length in range(LENGTH):
            prefixes = list(itertools.product(range(VOCAB), repeat=prefix_length))
            ids = torch.tensor([[*PROMPT.tolist(), *prefix] for prefix in prefixes])
            probs = torch.softmax(target(ids).logits[:, -1].double(), dim=-1).numpy()
            for prefix, row in zip(prefixes, probs):
                for rest in itertools.product(range(VOCAB), repeat=LENGTH - prefix_length):
                    index = np.ravel_multi_index(prefix + rest, (VOCAB,) * LENGTH)
                    law[index] *= row[rest[0]]
    assert law.sum() == pytest.approx(1.0, abs=1e-12)
    return law


def sequence_counts(models, verifier: str, seed: int, branching: tuple[int, ...] | None = None,
                    draft_scheme: str | None = None, samples: int = SAMPLES,
                    q: TreeCacheLM | None = None) -> np.ndarray:
    """Counts of the first LENGTH tokens over SAMPLES generations; i.i.d. trees (3, 2) repeat tokens often
    at vocabulary 8, so they exercise the shared rows of equal siblings (`resispec.engine.decode.expand`)."""
    target, draft = models
    if branching is None:
        chain = (SEQUENCE_VERIFIERS[verifier].chains_only if verifier in SEQUENCE_VERIFIERS
                 else verifier in VERIFIERS and VERIFIERS[verifier].max_k == 1)  # "ar": no tree
        branching = (1, 1) if chain else (3, 2)
    if q is None:
        q = SelfDraft(draft, draft_scheme) if draft_scheme else TreeLM(draft)
    decoder = BatchDecoder(target, q, verifier, branching, Sampling(1.0), seed=seed)
    tokens = np.concatenate([decoder.generate(PROMPT, LENGTH, min(BATCH, samples - done))
                             for done in range(0, samples, BATCH)])
    return np.bincount(np.ravel_multi_index(tokens.T, (VOCAB,) * LENGTH), minlength=VOCAB**LENGTH)


@pytest.mark.parametrize("verifier", EXACT)
def test_exact_verifiers_reproduce_the_target_sequence_law(models, target_law, verifier):
    chi = merged_chi_square(sequence_counts(models, verifier, seed=1), target_law)
    assert chi.pvalue >= LEVEL, (verifier, chi)


@pytest.mark.parametrize("verifier", CONTROLS)
def test_controls_are_rejected_at_the_sequence_level(models, target_law, verifier):
    chi = merged_chi_square(sequence_counts(models, verifier, seed=2, samples=CONTROL_SAMPLES), target_law)
    assert chi.pvalue < LEVEL, (verifier, chi)


def test_autoregressive_baseline_matches_too(models, target_law):
    chi = merged_chi_square(sequence_counts(models, "ar", seed=3), target_law)
    assert chi.pvalue >= LEVEL


@pytest.mark.parametrize("verifier, branching, scheme", [
    ("resispec", (1, 1, 1), None),  # a chain: every node decided by sps in one batched call
    ("resispec", (1, 3), None),  # a chain part (node 0 by batched sps), then resispec over 3 candidates
    ("pooled", (3, 2), "int8"),
    ("resispec_wor", (2, 2), "bf16"),
])
def test_chains_and_quantized_self_drafts_reproduce_the_target_law(models, target_law, verifier, branching, scheme):
    chi = merged_chi_square(sequence_counts(models, verifier, 4, branching, scheme), target_law)
    assert chi.pvalue >= LEVEL, (verifier, branching, scheme, chi)


@pytest.mark.parametrize("verifier, branching", [("rrs_wor", (1, 1, 1)), ("rrs", (3, 2))])
def test_the_int4_self_draft_reproduces_the_target_law(models, target_law, verifier, branching):
    """int4 needs 32 inputs per group: a draft network of width 32 (its layers are int4, its head int8)."""
    target, _ = models
    wide_draft = tiny_llama(5, num_layers=1, hidden_size=32)
    chi = merged_chi_square(sequence_counts((target, wide_draft), verifier, 6, branching, "int4"), target_law)
    assert chi.pvalue >= LEVEL, (verifier, branching, chi)


def test_a_control_on_a_chain_keeps_its_own_rule_and_is_rejected(models, target_law):
    verifier = "resispec_paper"
    chi = merged_chi_square(sequence_counts(models, verifier, 5, (1, 1, 1), "int8", samples=600), target_law)
    assert chi.pvalue < LEVEL, (verifier, chi)


@pytest.mark.parametrize("verifier, branching, draft", [
    ("rrs", (3, 2), "ngram"),  # rounds it declines (no recurring suffix yet) are one-token rounds
    ("resispec_wor", (2, 2), "ngram"),  # without replacement from a near one-hot q (full support by its floor)
    ("pooled", (2, 1), "layer-skip"),  # the target's second layer alone
])
def test_the_ngram_and_layer_skip_drafts_reproduce_the_target_law(models, target_law, verifier, branching, draft):
    target, _ = models
    q = NGramDraft(VOCAB, max_n=3, min_n=1) if draft == "ngram" else LayerSkipDraft(target, [1])
    chi = merged_chi_square(sequence_counts(models, verifier, 7, branching, q=q), target_law)
    assert chi.pvalue >= LEVEL, (verifier, branching, draft, chi)


@pytest.mark.parametrize("verifier, branching", [
    ("rrs", (3, 2)),  # depth 2: the draft's own predicted state stands in for the target's
    ("resispec_wor", (2, 2)),
])
def test_the_feature_draft_reproduces_the_target_law(models, target_law, verifier, branching, tmp_path):
    """The feature draft reads the target's states between rounds (`Decoder` hands them over; the batch decoder
    does not), so these generations run one at a time through `Decoder`, one decoder for all."""
    target, _ = models
    head = FeatureHead(target, torch.tensor([0, 1, 2, 4, 5, 7]), init_layer=1)
    config = target.config
    path = tmp_path / "feature.safetensors"
    save_draft(head, dict(model_type=config.model_type, hidden_size=config.hidden_size,
                          vocab_size=config.vocab_size), path)
    decoder = Decoder(target, FeatureDraft(target, path), verifier, branching, Sampling(1.0), seed=9)
    tokens = np.array([list(decoder.generate(PROMPT, LENGTH)) for _ in range(SAMPLES)])
    counts = np.bincount(np.ravel_multi_index(tokens.T, (VOCAB,) * LENGTH), minlength=VOCAB**LENGTH)
    chi = merged_chi_square(counts, target_law)
    assert chi.pvalue >= LEVEL, (verifier, branching, chi)


class HistoryShapes:
    """A shape from the past only: the context's last token picks plain, a chain or a tree, so a generation's
    shape changes from round to round."""

    changes: list[dict] = []

    def __init__(self, shapes: tuple[tuple[int, ...], ...]) -> None:
        self.shapes = shapes

    def next_shape(self, emitted: int, context: list[int]) -> tuple[int, ...]:
        return self.shapes[context[-1] % len(self.shapes)]

    def observe(self, record) -> None:
        pass


class PeekingShapes(HistoryShapes):
    """A control that breaks the rule: it reads the round's own first uniform (a copy of the loop's generator)
    and decodes plainly when it is below 1/2, i.e. it picks the shape from the round's draws."""

    def __init__(self, decoder_rng: list) -> None:
        super().__init__(((), (1, 1)))
        self.decoder_rng = decoder_rng

    def next_shape(self, emitted: int, context: list[int]) -> tuple[int, ...]:
        peek = copy.deepcopy(self.decoder_rng[0].rng).random()
        return () if peek < 0.5 else (1, 1)


@pytest.mark.parametrize("verifier, shapes", [
    ("resispec", ((), (1, 1), (3, 2), (1,))),
    ("sps", ((1,), (), (1, 1, 1))),
])
def test_shapes_that_change_mid_run_keep_the_target_law(models, target_law, verifier, shapes):
    """The loop under a shape policy (`resispec.engine.decode.adaptive`'s contract): each round's shape from past
    rounds only; one decoder for all generations, one at a time."""
    target, draft = models
    decoder = Decoder(target, TreeLM(draft), verifier, shapes[1] or (1,), Sampling(1.0), seed=11,
                      shapes=HistoryShapes(shapes))
    tokens = np.array([list(decoder.generate(PROMPT, LENGTH)) for _ in range(SAMPLES)])
    assert len(decoder.stats.shape_tokens) >= 2
    counts = np.bincount(np.ravel_multi_index(tokens.T, (VOCAB,) * LENGTH), minlength=VOCAB**LENGTH)
    chi = merged_chi_square(counts, target_law)
    assert chi.pvalue >= LEVEL, (verifier, shapes, chi)


def test_the_online_cost_model_keeps_the_target_law(models, target_law):
    """`OnlineShapes` deciding from this run's clocks (a prior that favours a tree; plain checks and probes)."""
    target, draft = models
    prior = Calibration([0.7, 0.8, 0.85], {n: 0.001 + 0.0001 * n for n in COST_POINTS},
                        {w: 0.0002 for w in DRAFT_COST_POINTS}, 0.0003, 100, [1.0] * 12, {1: 1e-4, 2: 1e-4, 3: 1e-4},
                        0.0002)
    policy = OnlineShapes(prior)
    decoder = Decoder(target, TreeLM(draft), "resispec", (1,), Sampling(1.0), seed=12, shapes=policy)
    tokens = np.array([list(decoder.generate(PROMPT, LENGTH)) for _ in range(SAMPLES)])
    assert len({tuple(change["branching"]) for change in policy.changes}) >= 2, policy.changes
    counts = np.bincount(np.ravel_multi_index(tokens.T, (VOCAB,) * LENGTH), minlength=VOCAB**LENGTH)
    chi = merged_chi_square(counts, target_law)
    assert chi.pvalue >= LEVEL, chi


def test_a_shape_chosen_from_the_rounds_own_draws_is_rejected(models, target_law):
    target, draft = models
    holder: list = []
    decoder = Decoder(target, TreeLM(draft), "resispec", (1, 1), Sampling(1.0), seed=13, shapes=PeekingShapes(holder))
    holder.append(decoder)
    tokens = np.array([list(decoder.generate(PROMPT, LENGTH)) for _ in range(SAMPLES)])
    counts = np.bincount(np.ravel_multi_index(tokens.T, (VOCAB,) * LENGTH), minlength=VOCAB**LENGTH)
    chi = merged_chi_square(counts, target_law)
    assert chi.pvalue < LEVEL, chi
