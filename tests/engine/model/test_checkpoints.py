"""Your own models: local target / draft checkpoints (``resispec.engine.model.checkpoints``), tiny ones written here."""

from __future__ import annotations

import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from resispec.engine.drafts.registry import make_draft
from resispec.engine.model.checkpoints import load_checkpoint, load_draft_model
from resispec.engine.model.models import load_target
from resispec.engine.model.tiny import tiny_llama
from resispec.engine.runtime.tree_lm import TreeCacheLM


def word_tokenizer(size: int, prefix: str = "t") -> PreTrainedTokenizerFast:
    """A whitespace word-level tokenizer over the words ``t0 .. t{size-1}`` (t1 ends a sequence)."""
    backend = Tokenizer(models.WordLevel({f"{prefix}{i}": i for i in range(size)}, unk_token=f"{prefix}0"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token=f"{prefix}0", eos_token=f"{prefix}1")


def write(tmp_path, name: str, model, tokenizer=None):
    folder = tmp_path / name
    model.save_pretrained(folder)
    if tokenizer is not None:
        tokenizer.save_pretrained(folder)
    return folder


def test_a_saved_checkpoint_loads_as_the_target(tmp_path):
    original = tiny_llama(0)
    model, tokenizer = load_target(path=write(tmp_path, "tiny", original, word_tokenizer(8)))
    ids = torch.tensor([[3, 1, 5]])
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, original(ids).logits)
    assert tokenizer("t3 t1").input_ids == [3, 1] and not model.training


def test_a_saved_draft_loads_by_path(tmp_path):
    target, _ = load_checkpoint(write(tmp_path, "target", tiny_llama(0), word_tokenizer(8)))
    draft = make_draft(str(write(tmp_path, "draft", tiny_llama(1, num_layers=1), word_tokenizer(8))), target)
    assert isinstance(draft, TreeCacheLM) and draft.model.config.num_hidden_layers == 1  # CompactLM for Llama


@pytest.mark.parametrize("make, message", [
    (lambda tmp: tmp / "missing", "no checkpoint"),
    (lambda tmp: (tmp / "x.bin").write_bytes(b"0") and tmp / "x.bin", "neither a checkpoint directory nor a .gguf"),
    (lambda tmp: (tmp / "empty").mkdir() or tmp / "empty", "without config.json"),
    (lambda tmp: write(tmp, "no-tokenizer", tiny_llama(0)), "no tokenizer"),
    (lambda tmp: write(tmp, "big-tokenizer", tiny_llama(0), word_tokenizer(9)), "more than the model's vocabulary"),
])
def test_bad_target_paths_get_one_clear_error(tmp_path, make, message):
    with pytest.raises(ValueError, match=f"target: .*{message}"):
        load_target(path=make(tmp_path))


def test_a_draft_with_another_vocabulary_is_refused(tmp_path):
    target, _ = load_checkpoint(write(tmp_path, "target", tiny_llama(0), word_tokenizer(8)))
    with pytest.raises(ValueError, match="draft: .* vocabulary of 9 tokens, the target's has 8"):
        load_draft_model(write(tmp_path, "wide", tiny_llama(1, vocab_size=9), word_tokenizer(9)), target)
    renamed = write(tmp_path, "renamed", tiny_llama(1), word_tokenizer(8, prefix="w"))
    with pytest.raises(ValueError, match="draft: the tokenizer of .* differs from the target's"):
        make_draft(str(renamed), target)


def test_a_draft_without_tokenizer_is_checked_by_vocabulary_size(tmp_path):
    target, _ = load_checkpoint(write(tmp_path, "target", tiny_llama(0), word_tokenizer(8)))
    assert load_draft_model(write(tmp_path, "bare", tiny_llama(1)), target).config.vocab_size == 8
