"""Writes that never destroy what was there: every output goes to a temporary name and is renamed on success.

``atomic_path(path)`` yields a temporary path in the same folder as ``path`` (a hidden name that keeps
the suffix, so writers that go by it, like matplotlib's ``savefig`` or NumPy's ``savez``, write the
same format); when the block ends without an exception the file is flushed to disk (``fsync``) and
renamed onto ``path`` (``os.replace``, atomic within one filesystem: a reader sees the old file or the
new one, never half of one), then the folder is synced. On any exception (a full disk, a file too
large, a bad row, Ctrl-C) the temporary file is removed and ``path`` is left as it was.

``staged_directory(path)`` does the same for a set of files: a hidden staging folder beside ``path``
(marked by ``STAGING_MARKER``, so nobody mistakes it for a complete set) that replaces ``path`` on
success, or is removed.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STAGING_MARKER = ".resispec-staging"
"""A file in a staging folder: a set being written (or left by a killed writer), never a complete set."""


def _hidden_sibling(path: Path, kind: str) -> Path:
    """``folder/.stem.kind-TOKEN.suffix``: hidden, in the same folder (same filesystem), same suffix."""
    suffix = "".join(path.suffixes[-1:])
    stem = path.name[: len(path.name) - len(suffix)] if suffix else path.name
    return path.with_name(f".{stem}.{kind}-{secrets.token_hex(4)}{suffix}")


def _sync(path: Path) -> None:
    """``fsync`` a file or a folder (a folder's entry list: the rename itself)."""
    descriptor = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0))
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path to write ``path``'s new content to; renamed onto ``path`` on success (module doc)."""
    path = Path(path)
    temporary = _hidden_sibling(path, "partial")
    try:
        yield temporary
        _sync(temporary)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _sync(path.parent.absolute())


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through ``atomic_path``; returns ``path``."""
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return Path(path)


@contextmanager
def staged_directory(path: str | Path) -> Iterator[Path]:
    """A fresh staging folder to write a whole set into; on success it replaces the folder ``path`` (the
    old one, if any, is removed only after the rename), on any exception it is removed (module doc).

    The caller decides whether an existing ``path`` may be replaced before entering."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = _hidden_sibling(path, "staging")
    staging.mkdir()
    (staging / STAGING_MARKER).write_text("a set being written; incomplete until renamed\n")
    try:
        yield staging
        (staging / STAGING_MARKER).unlink()
        for file in staging.iterdir():
            _sync(file)
        old = _hidden_sibling(path, "old") if path.exists() else None
        if old is not None:
            os.replace(path, old)
        os.replace(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _sync(path.parent.absolute())
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
