"""The feature draft (`resispec.engine.drafts.feature_draft`): its run-time forward is the training forward, the
decoding
loop hands it the target's states at the right positions, it survives bad input, and its weights round-trip."""

from __future__ import annotations

import types

import pytest
import torch

from resispec.engine.decode.batch import BatchDecoder
from resispec.engine.decode.calibration import lm_grow
from resispec.engine.decode.decoding import Decoder
from resispec.engine.decode.processing import Sampling
from resispec.engine.drafts.feature_draft import FeatureDraft, FeatureHead, load_feature_head
from resispec.engine.drafts.trained import read_draft_meta, save_draft
from resispec.engine.model.tiny import tiny_llama
from resispec.engine.runtime.compact_lm import CompactLM, signed_sin

S = torch.tensor([0, 2, 3, 5, 6])  # a proper subset of the vocabulary of 8: the floor outside it is exercised


def meta_of(target) -> dict:
    config = target.config
    return dict(model_type=config.model_type, hidden_size=config.hidden_size, vocab_size=config.vocab_size)


@pytest.fixture(scope="module")
def target():
    torch.manual_seed(0)
    return tiny_llama(2)


@pytest.fixture(scope="module")
def weights(target, tmp_path_factory):
    """A feature head started from the target's last layer, its weights perturbed (so W_in is not [I | I])."""
    head = FeatureHead(target, S, init_layer=1)
    with torch.no_grad():
        for parameter in head.parameters():
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=torch.Generator().manual_seed(1)))
    path = tmp_path_factory.mktemp("feature") / "feature.safetensors"
    save_draft(head, meta_of(target), path)
    return head, path


def chain_states(target, prompt: torch.Tensor, chain: torch.Tensor) -> torch.Tensor:
    """The target's final-norm states along ``chain`` (its `CompactLM`, teacher-forced)."""
    lm = CompactLM(target)
    lm_grow(lm, prompt, chain, torch.arange(-1, len(chain) - 1))
    return lm.last_features


def test_the_run_time_forward_is_the_training_forward(target, weights):
    """Teacher-forced over a chain with float products, the draft's q on S is the training forward's, pair for
    pair (pair j = f_(j-1) with the token at j, f_(-1) = 0), and every token outside S is GAP below S's least."""
    _, path = weights
    head = load_feature_head(target, path)[0]  # the saved (half-precision) weights
    prompt, chain = torch.tensor([3, 1]), torch.tensor([1, 4, 7, 2, 2, 6])
    states = chain_states(target, prompt, chain)
    logits = lm_grow(FeatureDraft(target, path, int8=False), prompt, chain, torch.arange(-1, len(chain) - 1), states)
    embed = target.model.embed_tokens.weight
    inputs = torch.cat([torch.zeros(1, states.shape[1]), states[:-1]])[None]
    positions = torch.arange(len(chain))
    cos, sin = (t[0] for t in target.model.rotary_emb(inputs, positions[None]))
    with torch.no_grad():
        g = head(embed[chain][None], inputs, cos, signed_sin(sin))[0]
    torch.testing.assert_close(logits[:, S], g @ embed[S].T, rtol=1e-5, atol=1e-5)
    outside = torch.tensor([i for i in range(8) if i not in S])
    torch.testing.assert_close(logits[:, outside], (logits[:, S].amin(1, keepdim=True) - 40.0).expand(-1, 3))


class RecordingDraft(FeatureDraft):
    """Records q's logits at every round's root with the root's pair index (its position in the answer)."""

    def grow(self, tokens, parents):
        position = self.prefix_len + len(self._pending)
        logits = super().grow(tokens, parents)
        if int(parents[0]) == -1:
            self.roots.append((position, logits[0]))
        return logits


@pytest.mark.parametrize("verifier, branching", [("rrs", (2, 2)), ("sps", (1, 1, 1)), ("rrs", (3,))])
def test_decoding_hands_the_draft_the_targets_states_at_the_accepted_positions(target, weights, verifier, branching):
    """At every round's root the draft sees only the target's own states, so its q there is the teacher-forced q
    at that position of the decoded text: the states are observed at the accepted path's rows, in order, and the
    pairs the tree fed with predicted states are re-fed with the observed ones."""
    _, path = weights
    draft = RecordingDraft(target, path, int8=False)
    draft.roots = []
    prompt = torch.tensor([3, 1])
    decoder = Decoder(target, draft, verifier, branching, Sampling(1.0), seed=4)
    tokens = list(decoder.generate(prompt, 30))
    assert decoder.stats.target_forwards < 30  # candidates were accepted: trees were fed and dropped
    chain = torch.tensor([int(prompt[-1]), *tokens])
    states = chain_states(target, prompt, chain)
    forced = lm_grow(FeatureDraft(target, path, int8=False), prompt, chain, torch.arange(-1, len(chain) - 1), states)
    assert len(draft.roots) == decoder.stats.target_forwards
    for position, logits in draft.roots:
        torch.testing.assert_close(logits, forced[position], rtol=1e-4, atol=1e-4)  # other row counts


def test_int8_products_keep_q_close(target, weights):
    _, path = weights
    prompt, chain = torch.tensor([3, 1]), torch.tensor([1, 4, 7, 2])
    states = chain_states(target, prompt, chain)
    parents = torch.arange(-1, len(chain) - 1)
    q = [torch.softmax(lm_grow(FeatureDraft(target, path, int8=int8), prompt, chain, parents, states), -1)
         for int8 in (False, True)]
    assert float((q[0] - q[1]).abs().sum(-1).max()) < 0.05


def test_weights_round_trip_with_their_token_set(target, weights):
    head, path = weights
    draft = FeatureDraft(target, path)
    assert draft.tokens.dtype == torch.long and torch.equal(draft.tokens, S)
    assert read_draft_meta(path) == meta_of(target)


def test_bad_input_is_named(target, weights, tmp_path):
    _, path = weights
    other = tiny_llama(3, hidden_size=32)
    with pytest.raises(ValueError, match="feature weights .* not this target"):
        FeatureDraft(other, path)
    with pytest.raises(ValueError, match="distinct token ids"):
        FeatureHead(target, torch.tensor([1, 1]))
    with pytest.raises(ValueError, match="distinct token ids"):
        FeatureHead(target, torch.tensor([0, 8]))
    not_llama = types.SimpleNamespace(config=types.SimpleNamespace(model_type="gpt2"))
    with pytest.raises(ValueError, match="feature draft needs a Llama-family target"):
        FeatureDraft(not_llama, path)
    with pytest.raises(ValueError, match="score the target along the chain first"):
        lm_grow(FeatureDraft(target, path), torch.tensor([3]), torch.tensor([3, 1]), torch.tensor([-1, 0]))
    with pytest.raises(ValueError, match="a batch does not hand them over"):
        BatchDecoder(target, FeatureDraft(target, path), "rrs", (2,))
    draft = FeatureDraft(target, path)
    draft.prefill(torch.tensor([3]))
    with pytest.raises(ValueError, match="its parent must be grown in an earlier call"):
        draft.grow(torch.tensor([3, 1]), torch.tensor([-1, 0]))
    draft.prefill(torch.tensor([3]))
    draft.observe(torch.zeros(3, target.config.hidden_size))
    with pytest.raises(ValueError, match="3 states observed past the cache for 1 accepted"):
        draft.commit(torch.tensor([3]))
