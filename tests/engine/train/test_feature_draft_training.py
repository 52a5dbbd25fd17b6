"""Training the feature draft (`resispec.engine.train.train_feature_draft`): the head statistics, the pairs'
alignment, the
two passes' losses, and the pipeline end to end on the tiny preset."""

from __future__ import annotations

import json

import pytest
import torch

from resispec.engine.drafts.feature_draft import PRODUCTS, FeatureDraft, FeatureHead
from resispec.engine.model.tiny import tiny_llama
from resispec.engine.train.draft_data import Sequences
from resispec.engine.train.train_feature_draft import head_statistics, pair_batch, pass_losses
from tests.engine.model.test_models import requires_target_wheel


def toy_sequences(hidden: int) -> Sequences:
    """Two sequences: prompts of 2 and 3 tokens, then 3 and 2 generated tokens, states numbered by row."""
    states = torch.arange(5 * hidden, dtype=torch.float32).reshape(5, hidden) / (5 * hidden)
    return Sequences(tokens=torch.tensor([1, 2, 3, 4, 5, 6, 7, 1, 2, 3]), lengths=torch.tensor([5, 5]),
                     prompt_lengths=torch.tensor([2, 3]), prompts=torch.tensor([0, 1]), hidden=states)


def test_head_statistics_are_the_softmax_over_the_whole_vocabulary():
    generator = torch.Generator().manual_seed(0)
    head, states = torch.randn(50, 6, generator=generator), torch.randn(7, 6, generator=generator)
    log_z, mass = head_statistics(head, states, chunk=3)
    p = torch.softmax(states @ head.T, dim=-1)
    torch.testing.assert_close(log_z, torch.logsumexp(states @ head.T, dim=-1))
    torch.testing.assert_close(mass, p.sum(0).double(), rtol=1e-6, atol=1e-6)


def test_pair_j_holds_the_state_before_it_and_targets_its_own():
    """Pair j = (f_(j-1), x_(P-1+j)) with f_(-1) = 0; its target is f_j (the state that drew x_(P+j))."""
    data = toy_sequences(4)
    log_z = torch.arange(5.0)
    batch = pair_batch(data, log_z, [1, 0])
    assert batch.tokens.tolist() == [[1, 2, 0], [2, 3, 4]]
    assert batch.valid.tolist() == [[True, True, False], [True, True, True]]
    torch.testing.assert_close(batch.targets[1], data.hidden[:3])
    torch.testing.assert_close(batch.inputs[1], torch.cat([torch.zeros(1, 4), data.hidden[:2]]))
    torch.testing.assert_close(batch.inputs[0, :2], torch.cat([torch.zeros(1, 4), data.hidden[3:4]]))
    assert batch.log_z.tolist() == [[3.0, 4.0, 0.0], [0.0, 1.0, 2.0]]


def test_a_few_steps_lower_both_passes_losses():
    target = tiny_llama(2)
    generator = torch.Generator().manual_seed(3)
    lengths = torch.tensor([9, 10, 8])
    data = Sequences(tokens=torch.randint(0, 8, (int(lengths.sum()),), generator=generator), lengths=lengths,
                     prompt_lengths=torch.tensor([2, 2, 2]), prompts=torch.arange(3),
                     hidden=torch.randn(int(lengths.sum()) - 6, target.config.hidden_size, generator=generator))
    head = target.model.embed_tokens.weight.detach()
    log_z, _ = head_statistics(head, data.hidden)
    model = FeatureHead(target, torch.arange(8), init_layer=1)
    batch = pair_batch(data, log_z, [0, 1, 2])
    with torch.no_grad():
        before = [float(loss) for loss in pass_losses(model, target, batch, 1.0)[0]]
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(20):
        optimizer.zero_grad()
        sum(pass_losses(model, target, batch, 1.0)[0]).backward()
        optimizer.step()
    with torch.no_grad():
        after = [float(loss) for loss in pass_losses(model, target, batch, 1.0)[0]]
    assert all(a < 0.8 * b for a, b in zip(after, before)), (before, after)


def test_training_script_smoke(tmp_path, capsys):
    from resispec.cli import main

    command = ["train-draft", "--preset", "tiny", "--draft", "feature", "--work", str(tmp_path), "--threads", "1"]
    assert main(command) == 0
    results = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert 0 < results["depth1"] <= 1 and 0 < results["depth2"] <= 1 and results["train_positions"] > 0
    path = tmp_path / "draft_train" / "tiny" / "feature_draft.safetensors"
    assert all((path.parent / f"feature_draft_overlap.{kind}").is_file() for kind in ("png", "csv"))
    from resispec.engine.train.train_draft import tiny_setup

    draft = FeatureDraft(tiny_setup()[0], path)
    assert len(draft.tokens) == results["head_tokens"]


def test_committed_weights_are_small_and_hold_only_the_drafts_own_tensors():
    from safetensors import safe_open

    from resispec.engine.drafts.feature_draft import FEATURE_WEIGHTS_PATH
    from resispec.engine.drafts.trained import read_draft_meta

    assert FEATURE_WEIGHTS_PATH.stat().st_size <= 25 * 10**6
    meta = read_draft_meta(FEATURE_WEIGHTS_PATH)
    with safe_open(FEATURE_WEIGHTS_PATH, framework="pt") as handle:
        names = set(handle.keys())
        dtypes = {name: handle.get_slice(name).get_dtype() for name in names}
    assert names == {"tokens", "norm_in", "norm_post", *(f"weights.{name}" for name in PRODUCTS)}
    assert dtypes.pop("tokens") == "I64" and set(dtypes.values()) == {"F16"}
    assert meta["model_type"] == "llama" and meta["vocab_size"] == 49152
    assert meta["results"]["head_tokens"] == meta["config"]["head_tokens"]


@pytest.mark.real_model
@requires_target_wheel
def test_the_committed_feature_draft_predicts_the_native_targets_next_token(real_target):
    """Teacher-forced on the native target's own sampled text (held-out prompts), the one-candidate acceptance
    sum min(p, q) is far above the untrained start (q = the previous position's p: about 0.09)."""
    from resispec.engine.data.prompts import encode_prompts, load_prompts
    from resispec.engine.decode.calibration import lm_grow, sample_continuation
    from resispec.engine.decode.processing import Sampling
    from resispec.engine.model.models import with_compute
    from resispec.engine.runtime.compact_lm import CompactLM

    model, tokenizer = real_target
    native = with_compute(model, "native")
    target, draft = CompactLM(native), FeatureDraft(native)
    heldout = [p for p in load_prompts() if p.split == "heldout"]
    overlaps = []
    for prompt in encode_prompts(tokenizer, heldout[:2]):
        sequence = sample_continuation(target, prompt, 32, Sampling(1.0), torch.Generator().manual_seed(0))
        chain = sequence[len(prompt) - 1:]
        parents = torch.arange(-1, len(chain) - 1)
        p = torch.softmax(lm_grow(target, prompt, chain, parents).float(), -1)[:-1]
        q = torch.softmax(lm_grow(draft, prompt, chain, parents, target.last_features), -1)[:-1]
        overlaps.append(torch.minimum(p, q).sum(-1))
    assert float(torch.cat(overlaps).mean()) > 0.2, overlaps
