"""The trained draft: committed weights, loading over a target, distillation pieces, the training pipeline."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch
from safetensors import safe_open

from resispec.engine.drafts import Draft, EarlyExitDraft, SelfDraft, TrainedDraft
from resispec.engine.drafts.trained import WEIGHTS_PATH, DraftLayers, fits, read_draft_meta, save_draft
from resispec.engine.model.tiny import tiny_llama
from resispec.engine.runtime.tree_lm import TreeLM
from resispec.engine.train.distill import TrainConfig, kl_and_overlap, learning_rate, step_sequences, train
from resispec.engine.train.draft_data import GenerationConfig, Sequences, generate_shards, sample_continuations
from tests.engine.model.test_models import requires_target_wheel

MAX_WEIGHTS_BYTES = 25 * 10**6


def chain(length: int) -> torch.Tensor:
    """Parents of a chain of `length` nodes rooted at node 0."""
    return torch.arange(-1, length - 1)


def chain_logits(draft: Draft, sequence: torch.Tensor, start: int) -> torch.Tensor:
    """The draft's logits after each of ``sequence[start - 1:]`` (prefix ``sequence[:start]`` prefilled)."""
    draft.prefill(sequence[:start])
    return draft.grow(sequence[start - 1 :], chain(len(sequence) - start + 1))


def copied_layers_draft(target, init_from) -> TreeLM:
    """An untrained draft over fresh copies of the target layers `init_from`."""
    return TreeLM(DraftLayers(target, init_from).view(target))


def test_committed_weights_are_small_and_hold_only_the_drafts_own_layers():
    assert WEIGHTS_PATH.is_file()
    assert WEIGHTS_PATH.stat().st_size <= MAX_WEIGHTS_BYTES
    meta = read_draft_meta(WEIGHTS_PATH)
    with safe_open(WEIGHTS_PATH, framework="pt") as handle:
        names = list(handle.keys())
        shapes = [tuple(handle.get_slice(name).get_shape()) for name in names]
        dtypes = {handle.get_slice(name).get_dtype() for name in names}
    assert all(name.startswith(("layers.", "norm.")) for name in names)
    assert {name.split(".")[1] for name in names if name.startswith("layers.")} == {
        str(i) for i in range(len(meta["init_from"]))
    }
    assert all(meta["vocab_size"] not in shape for shape in shapes)  # no embedding, no head
    assert dtypes == {"F16"} and meta["model_type"] == "llama" and meta["vocab_size"] == 49152


def test_draft_layers_before_training_are_the_target_with_layers_skipped():
    target = tiny_llama(seed=3, num_layers=3)
    sequence = torch.tensor([1, 5, 2, 7, 0, 3])
    first_two = copied_layers_draft(target, (0, 1))
    torch.testing.assert_close(
        chain_logits(first_two, sequence, 2), chain_logits(EarlyExitDraft(target, 2), sequence, 2), rtol=0, atol=1e-5
    )
    skipping = copied_layers_draft(target, (0, 2))
    assert not torch.allclose(chain_logits(skipping, sequence, 2), chain_logits(first_two, sequence, 2))
    with pytest.raises(ValueError, match="init_from"):
        DraftLayers(target, (0, 3))
    with pytest.raises(ValueError, match="init_from"):
        DraftLayers(target, ())


def test_saved_draft_reloads_in_float32_and_shares_only_embedding_and_head(tmp_path):
    target = tiny_llama(seed=4, num_layers=3)
    own = DraftLayers(target, (2, 0))
    with torch.no_grad():
        for parameter in own.parameters():
            parameter.add_(0.25 * torch.randn(parameter.shape, generator=torch.Generator().manual_seed(1)))
    path = tmp_path / "draft.safetensors"
    meta = dict(model_type="llama", hidden_size=16, vocab_size=8, init_from=[2, 0])
    save_draft(own, meta, path)
    draft = TrainedDraft(target, path)
    assert isinstance(draft, Draft) and draft.vocab_size == 8 and draft.meta == meta
    for name, parameter in draft.own.state_dict().items():
        assert parameter.dtype == torch.float32
        torch.testing.assert_close(parameter, own.state_dict()[name].half().float(), rtol=0, atol=0)
    target_storage = {p.data_ptr() for p in target.parameters()}
    shared = {p.data_ptr() for p in draft.model.parameters()} & target_storage
    assert shared == {target.model.embed_tokens.weight.data_ptr(), target.lm_head.weight.data_ptr()}
    sequence = torch.tensor([3, 1, 4, 1, 5])
    expected = own.view(target)(sequence[None]).logits[0, 1:]
    torch.testing.assert_close(chain_logits(draft, sequence, 2), expected, rtol=1e-2, atol=1e-2)
    assert fits(read_draft_meta(path), target)
    assert not fits(read_draft_meta(WEIGHTS_PATH), target)  # committed weights do not fit a tiny target
    with pytest.raises(ValueError, match="do not fit"):
        TrainedDraft(target, WEIGHTS_PATH)


def test_kl_and_overlap_formulas_and_gradient():
    generator = torch.Generator().manual_seed(0)
    p_logits, q_logits = torch.randn(5, 11, generator=generator), torch.randn(5, 11, generator=generator)
    q_logits.requires_grad_(True)
    kl, overlap = kl_and_overlap(p_logits, q_logits)
    p, q = (torch.softmax(x.detach().double(), -1).numpy() for x in (p_logits, q_logits))
    np.testing.assert_allclose(kl.detach().numpy(), (p * np.log(p / q)).sum(-1), rtol=1e-5)
    np.testing.assert_allclose(overlap.numpy(), np.minimum(p, q).sum(-1), rtol=1e-6)
    kl.sum().backward()
    np.testing.assert_allclose(q_logits.grad.numpy(), q - p, atol=1e-6)
    same_kl, same_overlap = kl_and_overlap(p_logits, p_logits)
    torch.testing.assert_close(same_kl, torch.zeros(5), rtol=0, atol=1e-6)
    torch.testing.assert_close(same_overlap, torch.ones(5))


def test_schedule_and_data_order():
    config = TrainConfig(init_from=(0,), steps=100, sequences_per_step=3, lr=1.0, warmup_steps=10,
                         eval_every=10, seed=5, bf16=False, min_lr_ratio=0.1)
    assert learning_rate(config, 0) == pytest.approx(0.1) and learning_rate(config, 9) == pytest.approx(1.0)
    assert learning_rate(config, 10) == pytest.approx(1.0) and learning_rate(config, 100) == pytest.approx(0.1)
    assert learning_rate(config, 55) == pytest.approx(0.55)
    epoch = [s for step in range(3) for s in step_sequences(config, 10, step)]  # 10 // 3 = 3 steps per epoch
    assert len(set(epoch)) == 9 and step_sequences(config, 10, 1) == step_sequences(config, 10, 1)
    assert step_sequences(config, 10, 3) != step_sequences(config, 10, 0)  # a fresh permutation per epoch
    with pytest.raises(ValueError, match="sequences_per_step"):
        step_sequences(config, 2, 0)


def test_sampled_continuations_carry_the_targets_states_and_stop_at_the_end_token():
    target = tiny_llama(seed=6, num_layers=2)
    prompts = [torch.tensor([1, 2, 3, 4]), torch.tensor([5, 6]), torch.tensor([7])]
    data = sample_continuations(target, prompts, 12, eos_token_id=0, generator=torch.Generator().manual_seed(2))
    assert data.num_targets == int((data.lengths - data.prompt_lengths).sum()) > len(prompts)
    for s, prompt in enumerate(prompts):
        tokens, prompt_len, hidden = data.sequence(s)
        assert prompt_len == len(prompt) and torch.equal(tokens[:prompt_len], prompt)
        generated = tokens[prompt_len:].tolist()
        assert 0 not in generated[:-1] and (generated[-1] == 0 or len(generated) == 12)
        with torch.no_grad():
            unpadded = target.model(input_ids=tokens[None]).last_hidden_state[0, prompt_len - 1 : -1]
        torch.testing.assert_close(hidden, unpadded, rtol=1e-4, atol=1e-4)


def test_shards_are_seeded_and_resumable(tmp_path):
    target = tiny_llama(seed=6, num_layers=2)
    prompts = [torch.tensor([1, 2, 3]), torch.tensor([5, 6]), torch.tensor([7, 7, 1, 2])]
    config = GenerationConfig(samples=2, max_new_tokens=5, batch_size=4, seed=3)
    first = generate_shards(target, prompts, config, tmp_path / "a", None, log=lambda _: None)
    (tmp_path / "a" / "shard_00001.safetensors").unlink()
    again = generate_shards(target, prompts, config, tmp_path / "a", None, log=lambda _: None)
    for field in Sequences.__dataclass_fields__:
        torch.testing.assert_close(getattr(first, field), getattr(again, field), rtol=0, atol=0)
    assert sorted(first.prompts.tolist()) == [0, 0, 1, 1, 2, 2] and len(list((tmp_path / "a").iterdir())) == 2


@pytest.mark.slow
def test_training_lowers_kl_and_resumes_exactly(tmp_path):
    target = tiny_llama(seed=7, num_layers=3)
    prompts = [torch.randint(0, 8, (n,), generator=torch.Generator().manual_seed(n)) for n in range(2, 8)]
    data = generate_shards(target, prompts, GenerationConfig(2, 6, 6, 0), tmp_path / "data", None, lambda _: None)
    config = TrainConfig(init_from=(0,), steps=6, sequences_per_step=3, lr=3e-2, warmup_steps=1, eval_every=3,
                         seed=0, bf16=False)

    def run(folder, stop_at=None):
        def log(line):
            if stop_at is not None and line.startswith(f"train: step {stop_at}/"):
                raise KeyboardInterrupt
        own = DraftLayers(target, config.init_from)
        return own, train(target, own, data, data, config, folder / "checkpoint.pt", log, checkpoint_seconds=0,
                          log_every=1)

    straight, curve = run(tmp_path / "straight")
    assert [row["step"] for row in curve] == [0, 3, 6]
    assert curve[-1]["heldout_kl"] < 0.8 * curve[0]["heldout_kl"]
    seen = [s for step in range(6) for s in step_sequences(config, len(data.lengths), step)]
    assert curve[-1]["train_tokens"] == int((data.lengths - data.prompt_lengths)[seen].sum())
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "resumed", stop_at=4)
    resumed, resumed_curve = run(tmp_path / "resumed")
    for name, parameter in straight.state_dict().items():
        torch.testing.assert_close(resumed.state_dict()[name], parameter, rtol=0, atol=0)
    assert [row["heldout_kl"] for row in resumed_curve] == [row["heldout_kl"] for row in curve]
    other = TrainConfig(**{**config.__dict__, "lr": 1e-3})
    with pytest.raises(ValueError, match="has config"):
        train(target, DraftLayers(target, (0,)), data, data, other, tmp_path / "straight" / "checkpoint.pt")


@pytest.mark.slow
def test_training_script_smoke(tmp_path, capsys):
    from resispec.cli import main

    command = ["train-draft", "--preset", "tiny", "--work", str(tmp_path), "--threads", "1"]
    assert main(command) == 0
    out = capsys.readouterr().out
    results = json.loads(out.splitlines()[-1])
    run_dir = tmp_path / "draft_train" / "tiny"
    for name in ("draft.safetensors", "draft_overlap.csv", "draft_overlap.png", "checkpoint.pt", "train.log"):
        assert (run_dir / name).is_file(), name
    assert 0 < results["heldout_overlap"] <= 1 and results["train_tokens"] > 0
    assert "eval: step 4" in out
    assert main(command) == 0
    out = capsys.readouterr().out
    assert "resumed from" in out and json.loads(out.splitlines()[-1]) == results


@pytest.mark.real_model
@requires_target_wheel
def test_real_trained_draft_beats_the_early_exit_draft(real_target):
    from resispec.engine.data.prompts import encode_prompts, load_prompts

    model, tokenizer = real_target
    draft = TrainedDraft(model)
    heldout = [p for p in load_prompts() if p.split == "heldout"]
    prompts = encode_prompts(tokenizer, heldout[:2])
    data = sample_continuations(model, prompts, 24, tokenizer.eos_token_id, torch.Generator().manual_seed(0))
    overlaps = {"trained": [], "early exit": []}
    for s in range(len(prompts)):
        tokens, prompt_len, hidden = data.sequence(s)
        p_logits = model.lm_head(hidden)
        for name, q in (("trained", draft), ("early exit", EarlyExitDraft(model, 6))):
            q_logits = chain_logits(q, tokens, prompt_len)[:-1]
            assert q_logits.shape == (len(hidden), 49152) and torch.isfinite(q_logits).all()
            overlaps[name].append(kl_and_overlap(p_logits, q_logits)[1])
    trained, early = (float(torch.cat(v).mean()) for v in overlaps.values())
    assert trained > early + 0.15, overlaps


def test_registry_names_the_trained_and_default_drafts():
    from resispec.engine.drafts.registry import DEFAULT_DRAFT, make_draft

    target = tiny_llama(seed=2, num_layers=3)
    assert DEFAULT_DRAFT == "default"
    default = make_draft("default", target)
    assert isinstance(default, SelfDraft) and default.scheme == "int4"  # CPU: the int4 self-draft
    assert make_draft("early-exit-2", target).num_layers == 2
    with pytest.raises(ValueError, match="do not fit"):
        make_draft("trained", target)


def test_held_out_pairs_acceptance_and_tokens_per_round():
    from resispec import get_verifier
    from resispec.engine.bench.draft_eval import draft_pairs, has_closed_form, mean_acceptance, tokens_per_round

    target = tiny_llama(seed=8, num_layers=3)
    data = sample_continuations(target, [torch.tensor([1, 2, 3]), torch.tensor([4, 5])], 6, None,
                                torch.Generator().manual_seed(0))
    draft = EarlyExitDraft(target, 1)
    first = len(data.sequence(0)[2])  # target rows of sequence 0; sequence 1's follow
    rows = np.array([1, first, first + 2, first + 5])
    p, q, drafts = draft_pairs(target, draft, data, rows)
    assert drafts.tolist() == [True] * 4  # a model draft drafts every round
    p_forward, _, _ = draft_pairs(target, draft, data, rows, p_model=target)  # p by the model's own forward
    np.testing.assert_allclose(p_forward, p, atol=1e-5)
    tokens, prompt_len, hidden = data.sequence(1)
    with torch.no_grad():
        expected_p = torch.softmax(target(tokens[None]).logits[0, prompt_len - 1 : -1].double(), -1)[[0, 2, 5]]
        expected_q = torch.softmax(draft.model(tokens[None]).logits[0, prompt_len - 1 : -1].double(), -1)[[0, 2, 5]]
    np.testing.assert_allclose(p[1:], expected_p.numpy(), atol=1e-5)
    np.testing.assert_allclose(q[1:], expected_q.numpy(), atol=1e-5)
    assert len(p) == 4 and np.allclose(p.sum(-1), 1) and np.allclose(q.sum(-1), 1)
    assert len(draft_pairs(target, draft, data)[0]) == data.num_targets

    rng = np.random.default_rng(0)
    assert has_closed_form(get_verifier("rrs")) and not has_closed_form(get_verifier("rrs_wor"))
    exact = np.mean([get_verifier("rrs_wor").acceptance(pi, qi, 2) for pi, qi in zip(p, q)])
    estimate, error = mean_acceptance("rrs_wor", p, q, 2, draws=4000, rng=rng)
    assert abs(estimate - exact) < 0.03 and error > 0
    rrs, _ = mean_acceptance("rrs", p, q, 1, draws=1, rng=rng)
    assert rrs == pytest.approx(np.minimum(p, q).sum(-1).mean())
    assert tokens_per_round({1: 0.5, 2: 0.8}, (2, 1, 1)) == pytest.approx(1 + 0.8 + 0.4 + 0.2)


def test_benchmark_prompts_are_not_training_prompts():
    """The engine benchmark measures the draft on text it was not distilled on: no benchmark prompt
    shares more than half of its words (Jaccard) with a training prompt."""
    from resispec.engine.data.prompts import load_bench_prompts, load_prompts

    def words(text: str) -> set[str]:
        return set(re.findall(r"[a-z]+", text.lower()))

    training = [words(p.text) for p in load_prompts() if p.split == "train"]
    for prompt in load_bench_prompts():
        closest = max(len(words(prompt) & other) / len(words(prompt) | other) for other in training)
        assert closest <= 0.5, f"benchmark prompt {prompt!r} is close to a training prompt ({closest:.2f})"
