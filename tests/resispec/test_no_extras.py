"""A bare ``pip install resispec`` (no extras) runs the CLI: ``--help``, ``audit`` and ``audit-sampler`` in a fresh
interpreter whose import of *every* optional package fails (issue 46: ``audit-sampler`` imported tqdm, an extra,
which the test that blocked only torch could not see). The optional packages are read from pyproject.toml's
extras, so a new extra is blocked here as soon as it is declared."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMPORT_NAMES = {"llama-cpp-python": "llama_cpp", "pytest-xdist": "xdist", "import-linter": "importlinter",
                "jinja2": "jinja2"}
"""Distributions whose import name is not their name with dashes as underscores."""


def optional_imports() -> list[str]:
    """The import names of every package an extra of pyproject.toml adds."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=!~\[ ]", spec, maxsplit=1)[0] for specs in extras.values() for spec in specs}
    return sorted(IMPORT_NAMES.get(name, name.replace("-", "_")) for name in names if name != "resispec")


SCRIPT = textwrap.dedent("""
    import importlib.machinery
    import sys

    BLOCKED = {blocked!r}

    class NoExtras(importlib.machinery.PathFinder):  # as if not installed: find_spec finds nothing
        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                return None
            return importlib.machinery.PathFinder.find_spec(name, path, target)

    sys.meta_path = [NoExtras if finder is importlib.machinery.PathFinder else finder for finder in sys.meta_path]
    from resispec.cli import main

    statuses = [main(argv) for argv in {runs!r}]
    loaded = sorted({{name.split(".")[0] for name in sys.modules}} & set(BLOCKED))
    print("statuses", statuses, "loaded", loaded)
""")


SAMPLER = textwrap.dedent("""
    import numpy as np

    rng = np.random.default_rng(0)


    def sps(p, q, candidates):  # p, q (B, V); candidates (B, 1): single-draft speculative sampling
        rows, x = np.arange(p.shape[0]), candidates[:, 0]
        accept = rng.random(p.shape[0]) * q[rows, x] < p[rows, x]
        residual = np.maximum(p - q, 0.0)
        residual /= np.maximum(residual.sum(axis=1, keepdims=True), 1e-300)
        drawn = (rng.random((p.shape[0], 1)) >= residual.cumsum(axis=1)).sum(axis=1)
        return np.where(accept, x, np.minimum(drawn, p.shape[1] - 1))
""")


def test_the_cli_runs_with_no_optional_package_importable(tmp_path):
    blocked = optional_imports()
    assert {"tqdm", "torch", "sympy", "matplotlib", "pyarrow", "panel", "transformers"} <= set(blocked)
    runs = [["audit", "--verifier", "rrs", "ears", "--k", "2", "--suite", "quick", "--samples", "2000"],
            ["audit-sampler", f"{tmp_path / 'numpy_sampler.py'}:sps", "--level", "node", "--k", "1", "--rule",
             "sps", "--samples", "1000"]]
    (tmp_path / "numpy_sampler.py").write_text(SAMPLER)
    script = SCRIPT.format(blocked=blocked, runs=runs)
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "statuses [0, 0] loaded []", result.stderr[-3000:]
    help_run = subprocess.run([sys.executable, "-c", SCRIPT.format(blocked=blocked, runs=[["--help"]])], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
    assert "audit-sampler" in help_run.stdout and "Traceback" not in help_run.stderr, help_run.stderr[-3000:]
