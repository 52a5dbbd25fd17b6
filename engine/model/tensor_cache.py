"""Tensors built at load time, cached in one safetensors file each beside the checkpoint they come from.

A cache file records in its metadata the format it was written in and the fingerprint of the file it was
built from (`resispec.engine.model.gguf.source_fingerprint`: size and the SHA-256 of the first and last 64 KiB, so
checking it costs two small reads). `cached_tensors` returns the stored tensors when both match; a file that
cannot be read or does not match (truncated, another format, built from another file) is named on one line
on stderr, discarded and rebuilt. What is built is said on one line first (or by the builder's own bar), so
a first run never looks hung; the file is written to a temporary name and renamed, never half-written.

Users: the native target's layers (`resispec.engine.model.native.cached_layers`) and the quantized self-drafts'
products (`resispec.engine.model.quantize.quantized_copy`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from resispec.engine.model.gguf import source_fingerprint
from resispec.formats.atomic import atomic_path


def cache_problem(path: Path, expected: dict[str, str]) -> str | None:
    """Why the cache file ``path`` cannot be used (None: it can): unreadable, or metadata other than
    ``expected`` (format and source fingerprint)."""
    try:
        with safe_open(str(path), "pt") as opened:
            metadata = opened.metadata() or {}
    except (OSError, SafetensorError) as error:
        return f"unreadable: {str(error).splitlines()[0] if str(error) else type(error).__name__}"
    found = {key: metadata.get(key) for key in expected}
    if found.get("format") != expected.get("format"):
        return f"format {found.get('format')!r}, expected {expected.get('format')!r}"
    if found != expected:
        return "built from another file"
    return None


def cached_tensors(path: Path, cache_format: str, source: Path, build: Callable[[], dict[str, torch.Tensor]],
                   what: str) -> dict[str, torch.Tensor]:
    """The tensors stored in ``path`` if it was written in ``cache_format`` from ``source`` (its fingerprint),
    else ``build()``, stored there and returned (module docstring). ``what`` names them in the lines printed."""
    expected = {"format": cache_format, "source": source_fingerprint(source)}
    if path.is_file():
        problem = cache_problem(path, expected)
        if problem is None:
            try:
                return load_file(path)
            except (OSError, SafetensorError) as error:  # a truncated body behind a readable header
                problem = f"unreadable: {str(error).splitlines()[0]}"
        print(f"resispec: the cached {what} {path} is unusable ({problem}); discarded, rebuilding", file=sys.stderr)
        path.unlink(missing_ok=True)
    print(f"resispec: building {what} (once; cached in {path})", file=sys.stderr)
    tensors = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with atomic_path(path) as staging:
            save_file({name: tensor.contiguous() for name, tensor in tensors.items()}, staging, metadata=expected)
    except SafetensorError as error:  # its 25-line text on a full disk: one line naming the file instead
        reason = " ".join(str(error).split())[:200]
        raise OSError(f"cannot write the cached {what} {path}: {reason}") from None
    return tensors
