"""Tensors built at load time and cached beside the checkpoint (`resispec.engine.model.tensor_cache`), on the tiny Q4_1
GGUF's checkpoint: the int4 self-draft's products are built once and then read (the copy equal to a fresh
build, the target untouched), and a damaged or foreign cache file is named on one line, discarded and rebuilt."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import transformers
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM

from resispec.engine.model import gguf, quantize
from resispec.engine.model.quantize import QUANTIZED_CACHE_FORMAT, quantized_copy
from tests.engine.model.test_checkpoint_cache import _StubTokenizer
from tests.engine.model.tiny_gguf import write_tiny_gguf

TOKENS = torch.tensor([[1, 5, 2, 7]])


@pytest.fixture
def target(tmp_path, monkeypatch):
    """The float32 model of the tiny GGUF, loaded from its checkpoint in a temporary cache folder."""
    monkeypatch.setenv("RESISPEC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *args, **kwargs: _StubTokenizer())
    folder = gguf.ensure_checkpoint(write_tiny_gguf(tmp_path / "tiny.gguf"))
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.float32)
    return model.eval().requires_grad_(False)


def _count_builds(monkeypatch) -> list:
    builds = []
    build = quantize._quantized
    monkeypatch.setattr(quantize, "_quantized", lambda *args, **kwargs: (builds.append(1), build(*args, **kwargs))[1])
    return builds


def _cache_file(target) -> Path:
    return Path(target.name_or_path) / "self-draft-int4-float32.safetensors"


def test_the_self_drafts_products_are_built_once_then_read(target, monkeypatch, capsys):
    reference = target(TOKENS).logits.clone()
    builds = _count_builds(monkeypatch)
    built = quantized_copy(target, "int4")
    assert builds == [1] and "building the int4 self-draft" in capsys.readouterr().err
    read = quantized_copy(target, "int4")
    assert builds == [1] and capsys.readouterr().err == ""
    assert torch.equal(built(TOKENS).logits, read(TOKENS).logits)
    assert torch.equal(target(TOKENS).logits, reference)  # the target's weights are neither cast nor moved
    assert target.model.layers[0].mlp.up_proj.weight.dtype == torch.float32


@pytest.mark.parametrize("damage, reason", [
    (lambda path: path.write_bytes(path.read_bytes()[:200]), "unreadable"),
    (lambda path: save_file({"x": torch.zeros(1)}, path, metadata={"format": "quantized-products-v0"}), "format"),
    (lambda path: save_file({"x": torch.zeros(1)}, path, metadata={"format": QUANTIZED_CACHE_FORMAT,
                                                                    "source": "1:abc"}), "another file"),
])
def test_a_damaged_or_foreign_cache_file_is_named_discarded_and_rebuilt(target, monkeypatch, capsys, damage, reason):
    built = quantized_copy(target, "int4")
    path = _cache_file(target)
    damage(path)
    capsys.readouterr()
    builds = _count_builds(monkeypatch)
    rebuilt = quantized_copy(target, "int4")
    lines = [line for line in capsys.readouterr().err.splitlines() if "unusable" in line]
    assert builds == [1] and len(lines) == 1 and str(path) in lines[0] and reason in lines[0]
    assert torch.equal(built(TOKENS).logits, rebuilt(TOKENS).logits)
    quantized_copy(target, "int4")
    assert builds == [1]  # the rebuilt file is whole


def test_a_full_disk_while_building_ends_in_one_line_naming_the_cache_file(tmp_path, monkeypatch):
    from safetensors import SafetensorError

    from resispec.engine.model import tensor_cache

    def full_disk(tensors, filename, metadata=None):
        Path(filename).write_bytes(b"half")
        raise SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No '
                              'space left on device" })')

    source = tmp_path / "source.bin"
    source.write_bytes(b"weights")
    monkeypatch.setattr(tensor_cache, "save_file", full_disk)
    with pytest.raises(OSError, match=r"^cannot write the cached test tensors .*cache\.safetensors: Error while "
                                      r"serializing: .*No space left on device"):
        tensor_cache.cached_tensors(tmp_path / "cache.safetensors", "f/1", source, lambda: {"a": torch.zeros(3)},
                                    "test tensors")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["source.bin"]  # nothing half-written is left
