"""The dequantized checkpoint in the cache: complete or rebuilt (a truncated or foreign one is named on one
line, discarded and written again), on a tiny Q4_1 GGUF (its tokenizer stubbed: the tiny file has none)."""

from __future__ import annotations

import json

import pytest
import transformers

from resispec.engine.model import gguf
from tests.engine.model.tiny_gguf import write_tiny_gguf


class _StubTokenizer:
    def save_pretrained(self, folder) -> None:
        (folder / "tokenizer.json").write_text("{}")


@pytest.fixture
def tiny_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RESISPEC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *args, **kwargs: _StubTokenizer())
    return write_tiny_gguf(tmp_path / "tiny.gguf")


def _count_writes(monkeypatch) -> list:
    writes = []
    write = gguf.write_checkpoint
    monkeypatch.setattr(gguf, "write_checkpoint", lambda *args: (writes.append(args), write(*args)))
    return writes


def test_a_complete_checkpoint_is_reused(tiny_file, monkeypatch, capsys):
    folder = gguf.ensure_checkpoint(tiny_file)
    capsys.readouterr()  # the first build's progress
    assert (folder / "model.safetensors").is_file() and gguf.checkpoint_problem(tiny_file, folder) is None
    (folder / "native-layers.safetensors").write_bytes(b"added later beside it")  # not the checkpoint's own
    writes = _count_writes(monkeypatch)
    assert gguf.ensure_checkpoint(tiny_file) == folder and writes == [] and capsys.readouterr().err == ""


@pytest.mark.parametrize("damage, reason", [
    (lambda folder: (folder / "model.safetensors").write_bytes((folder / "model.safetensors").read_bytes()[:100]),
     "model.safetensors is not the file recorded"),
    (lambda folder: (folder / gguf.MANIFEST).unlink(), "no readable manifest"),
    (lambda folder: (folder / gguf.MANIFEST).write_text('{"format": "resispec-checkpoint-v1", "so'),
     "no readable manifest"),
    (lambda folder: (folder / gguf.MANIFEST).write_text(json.dumps({"format": "v0"})), "another cache format"),
])
def test_a_damaged_checkpoint_is_named_discarded_and_rebuilt(tiny_file, monkeypatch, capsys, damage, reason):
    folder = gguf.ensure_checkpoint(tiny_file)
    damage(folder)
    writes = _count_writes(monkeypatch)
    assert gguf.ensure_checkpoint(tiny_file) == folder and len(writes) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("resispec:")]  # no bars
    assert len(lines) == 1 and str(folder) in lines[0] and reason in lines[0] and "rebuilding" in lines[0]
    assert gguf.checkpoint_problem(tiny_file, folder) is None


def test_a_checkpoint_of_another_source_is_rebuilt(tiny_file, monkeypatch, capsys):
    folder = gguf.ensure_checkpoint(tiny_file)
    manifest = json.loads((folder / gguf.MANIFEST).read_text())
    (folder / gguf.MANIFEST).write_text(json.dumps({**manifest, "source": "1:0"}))
    assert gguf.checkpoint_problem(tiny_file, folder) == "made from another file"


def test_a_full_disk_while_writing_the_checkpoint_ends_in_one_line_and_leaves_nothing(tiny_file, monkeypatch):
    from safetensors import SafetensorError

    def full_disk(self, folder, *args, **kwargs):
        (folder / "model.safetensors").write_bytes(b"half")
        raise SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No '
                              'space left on device" })')

    monkeypatch.setattr(transformers.PreTrainedModel, "save_pretrained", full_disk)
    with pytest.raises(OSError, match=r"^cannot write the checkpoint .*: Error while serializing: .*No space left"):
        gguf.ensure_checkpoint(tiny_file)
    cache = tiny_file.parent / "cache"
    assert not cache.exists() or not [path for path in cache.rglob("*") if path.is_file()]
