"""Writes that never destroy what was there: every output goes to a temporary name and is renamed on success.

``atomic_path(path)`` yields a temporary path in the same folder as ``path`` (a hidden name that keeps
the suffix, so writers that go by it, like matplotlib's ``savefig`` or NumPy's ``savez``, write the
same format); when the block ends without an exception the file is flushed to disk (``fsync``) and
renamed onto ``path`` (``os.replace``, atomic within one filesystem: a reader sees the old file or the
new one, never half of one), then the folder is synced. On any exception (a full disk, a file too
large, a bad row, Ctrl-C) the temporary file is removed and ``path`` is left as it was.

What ``path`` already is decides how (``target_kind``): a new path or a regular file is staged and renamed
(through a symlink: beside the file it leads to, which is replaced, the link kept); a character device or a
FIFO (``/dev/null``, ``/dev/stdout`` on a pipe or a terminal, a named pipe) is written *through*, never renamed
over, and a line on stderr says so; anything else (a folder, a block device, a socket, a dangling link) is
refused. A device that says no (``ENOSPC``, ``EIO``, ``EDQUOT``, ``EFBIG``) ends in one ``OSError`` naming
``path``.

``staged_directory(path)`` does the same for a set of files: a hidden staging folder beside ``path``
(marked by ``STAGING_MARKER``, so nobody mistakes it for a complete set) that replaces ``path`` on
success, or is removed.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DEVICE_ERRORS = (errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG)
"""What a full or failing device answers a write: one line naming the path, not a traceback."""

THROUGH = {stat.S_IFCHR: "a character device", stat.S_IFIFO: "a FIFO"}
"""Targets written through (opened and written in place) rather than staged and renamed over."""

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


def _error(number: int, message: str) -> OSError:
    """An ``OSError`` carrying ``number`` whose text is ``message`` alone (one line, no ``[Errno n]``)."""
    error = OSError(message)
    error.errno = number
    return error


def target_kind(path: Path) -> str:
    """``"new"``, ``"regular"`` or the special kind written through (``THROUGH``) of what ``path`` leads to;
    ``OSError`` naming ``path`` for anything else."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if path.is_symlink():
            raise _error(errno.ENOENT, f"{path} is a symlink to a missing path; refusing to write through it") \
                from None
        return "new"
    if stat.S_ISREG(mode):
        return "regular"
    kind = THROUGH.get(stat.S_IFMT(mode))
    if kind is None:
        what = "a folder" if stat.S_ISDIR(mode) else "not a regular file, a character device or a FIFO"
        raise _error(errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL, f"{path} is {what}; refusing to write it")
    return kind


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A path to write ``path``'s new content to: a temporary one renamed onto ``path`` (or the file a symlink
    leads to) on success, or ``path`` itself for a device or a FIFO, written through (module doc)."""
    path = Path(path)
    kind = target_kind(path)
    try:
        if kind in THROUGH.values():
            print(f"resispec: {path} is {kind}; written through, not staged", file=sys.stderr)
            yield path
            return
        final = Path(os.path.realpath(path)) if kind == "regular" and path.is_symlink() else path
        temporary = _hidden_sibling(final, "partial")
        try:
            yield temporary
            _sync(temporary)
            if target_kind(final) in THROUGH.values():  # replaced by a special file while it was written
                raise _error(errno.EEXIST, f"{final} changed while it was written; refusing to rename over it")
            os.replace(temporary, final)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        _sync(final.parent.absolute())
    except OSError as error:
        if error.errno in DEVICE_ERRORS:
            raise _error(error.errno, f"cannot write {path}: {os.strerror(error.errno)}") from None
        raise


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
    if path.exists() and not path.is_dir():
        raise _error(errno.EEXIST, f"{path} exists and is not a folder; refusing to replace it")
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
