"""`resispec.engine.model.row_glue`'s kernels compiled ahead of time, loaded without importing numba.

numba's JIT costs every process ~0.7 s before its first kernel call (its import, which imports ``scipy.linalg``,
and its registries; all under the GIL, so a loader thread does not hide it), which would take a warm ``generate``
past 3 s. So the first use compiles the kernels once into an extension module with ``numba.pycc`` (~8 s, one line
on stderr first) and caches it in ``<cache root>/kernels/`` (`resispec.engine.model.gguf.cache_root`), named by a
fingerprint of the kernels' source, numba, NumPy, Python and the machine; later processes import that file in
milliseconds. The compiled functions are the same numba code as the JIT ones, without fast-math, so they give the
same bits; pycc compiles for the architecture's generic CPU model, so a cache folder shared by machines of
different ISA extensions (x86-64 with and without AVX-512) serves them all, at no cost here (the loops are scalar
or memory-bound: 1.02 vs 1.01 us for a one-row RMSNorm). Where the ahead-of-time build fails (no C compiler, say)
the reason is said on one line and the JIT functions are used, at that start-up cost.

Loading machine code from a cache is trusted only as far as the cache: the build records the file's size and
SHA-256 beside it (``<name>.digest.json``), and a file that does not match its record (cut by a full disk or a
killed copy: importing it died with "Bus error" before) is named and rebuilt, never imported; the cache root, the
kernels folder and the file must belong to this user (or root) and be writable by no one else (their group's
write bit allowed only for the user's private group; ``check_trusted``), or the load is refused in one line
saying how to fix it (whoever can write a shared cache would run code as the user).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import stat
import sys
import sysconfig
import tempfile
import warnings
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import ModuleType

import numpy as np
import torch

from resispec.engine.model.gguf import cache_root
from resispec.formats.atomic import atomic_write_text

SOURCE = Path(__file__).with_name("row_glue.py")


def bits(tensor: torch.Tensor) -> np.ndarray:
    """A bfloat16 tensor's storage as int16 (shared, not copied), what the kernels take."""
    return tensor.view(torch.int16).numpy()


def module_name() -> str:
    """The compiled module's name: ``row_glue_`` and a fingerprint of everything its machine code depends on."""
    parts = [SOURCE.read_bytes(), importlib.metadata.version("numba").encode(), np.__version__.encode(),
             sys.version.encode(), platform.machine().encode()]
    return "row_glue_" + hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]


@cache
def row_kernels() -> ModuleType:
    """The kernels for this process: `load_row_kernels` from ``<cache root>/kernels``, once."""
    return load_row_kernels(cache_root() / "kernels", trusted_root=cache_root())


def load_row_kernels(folder: Path, trusted_root: Path | None = None) -> ModuleType:
    """The kernels (`resispec.engine.model.row_glue`'s functions by name): the compiled module cached in ``folder``,
    built there first if missing (a file that does not match its recorded digest, or does not load, is named,
    replaced and rebuilt); the JIT module where building fails (module doc). ``folder`` (and ``trusted_root``,
    the cache root above it) pass ``check_trusted`` first: ``ValueError`` otherwise."""
    name = module_name()
    path = folder / f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    try:
        return cached_extension(name, path, lambda: _build(name, path), "row kernels",
                                f"compiling the native forward's row kernels (once, ~8 s; cached in {path})",
                                trusted_root)
    except ValueError:
        raise
    except Exception as error:  # any build failure leaves the JIT kernels, which compute the same
        print(f"resispec: could not compile the row kernels ahead of time ({type(error).__name__}: {error}); using "
              "numba's JIT, the same arithmetic, ~0.7 s more at each start", file=sys.stderr)
        from resispec.engine.model import row_glue  # here: imports numba (module doc)

        return row_glue


def cached_extension(name: str, path: Path, build: Callable[[], None], what: str, building: str,
                     trusted_root: Path | None = None) -> ModuleType:
    """The extension module ``name`` cached at ``path``, built by ``build()`` first if missing (saying
    ``building`` on stderr); a file that does not match its recorded digest (`digest_problem`), or does not load,
    is named (``what``), removed and rebuilt. ``path``'s folder, ``trusted_root`` and the file pass `check_trusted`
    first (``ValueError``); what ``build`` raises propagates (the caller's fallback)."""
    for checked in (trusted_root, path.parent):
        if checked is not None and checked.exists():
            check_trusted(checked)
    if path.exists():
        check_trusted(path)
        problem = digest_problem(path)
        try:
            if problem is None:
                return _load(name, path)
        except ImportError as error:
            problem = f"does not load: {error}"
        print(f"resispec: the cached {what} {path} are unusable ({problem}); rebuilding them", file=sys.stderr)
        path.unlink(missing_ok=True)
    print(f"resispec: {building}", file=sys.stderr, flush=True)
    build()
    return _load(name, path)


def check_trusted(path: Path) -> None:
    """``ValueError`` in one line unless ``path`` belongs to this user (or root) and no one else may write it."""
    info = os.stat(path)
    if info.st_uid not in (os.getuid(), 0):
        raise ValueError(f"cache: {path} belongs to uid {info.st_uid}, not to you (uid {os.getuid()}); the row "
                         "kernels are machine code loaded from it: set RESISPEC_CACHE to a folder of your own")
    if info.st_mode & stat.S_IWOTH or info.st_mode & stat.S_IWGRP and not _private_group(info.st_gid):
        raise ValueError(f"cache: {path} is writable by others (mode {stat.S_IMODE(info.st_mode):o}); the row kernels "
                         f"are machine code loaded from it: chmod go-w {path}, or set RESISPEC_CACHE to a folder of "
                         "your own")


def _private_group(gid: int) -> bool:
    """Whether ``gid`` is this user's own group (a user private group, as a umask of 002 assumes: named like the
    user, no other members), whose write bit lets no one else write."""
    import grp
    import pwd

    try:
        group, user = grp.getgrgid(gid), pwd.getpwuid(os.getuid())
    except KeyError:
        return False
    return gid == user.pw_gid and group.gr_name == user.pw_name and set(group.gr_mem) <= {user.pw_name}


def _record_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.digest.json")


def _digest(path: Path) -> dict:
    with path.open("rb") as handle:
        return {"size": path.stat().st_size, "sha256": hashlib.file_digest(handle, "sha256").hexdigest()}


def digest_problem(path: Path) -> str | None:
    """Why the compiled file ``path`` is not the one that was built (None: it is): no record, another size or
    another SHA-256 than recorded when it was built."""
    try:
        recorded = json.loads(_record_path(path).read_text())
    except (OSError, ValueError):
        return "no digest recorded when it was built"
    actual = _digest(path)
    if actual["size"] != recorded.get("size"):
        return f"{actual['size']} bytes where {recorded.get('size')} were built"
    if actual["sha256"] != recorded.get("sha256"):
        return "its SHA-256 differs from the one recorded when it was built"
    return None


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"no extension module at {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(name: str, path: Path) -> None:
    """Compile the kernels of `resispec.engine.model.row_glue.SIGNATURES` into the extension module ``path``, written
    whole or not at all (built in a temporary folder beside it, then moved)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba.pycc's pending deprecation: it still builds on numba 0.60-0.68
        from numba.pycc import CC  # here: only when building (module doc)
    from resispec.engine.model import row_glue  # here: imports numba (module doc)

    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as folder:
        compiler = CC(name)
        compiler.output_dir = folder
        compiler.verbose = False
        for function, signature in row_glue.SIGNATURES.items():
            compiler.export(function, signature)(getattr(row_glue, function).py_func)
        compiler.compile()
        install_built(next(Path(folder).glob(f"{name}*")), path)


def install_built(built: Path, path: Path) -> None:
    """Move the freshly built extension ``built`` to ``path``, its size and SHA-256 recorded first
    (`digest_problem`)."""
    atomic_write_text(_record_path(path), json.dumps(_digest(built)))
    os.replace(built, path)
