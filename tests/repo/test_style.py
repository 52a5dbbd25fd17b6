"""The code passes ruff with the rules in pyproject.toml (``[tool.ruff]``), theory/ included."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

if importlib.util.find_spec("ruff") is None:
    pytest.skip("ruff is not installed (pip install 'resispec[test]')", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]


def ruff_check(*arguments: str, source: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *arguments], cwd=ROOT, input=source,
                          capture_output=True, text=True, timeout=120)


def test_ruff_finds_nothing():
    run = ruff_check(".")
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_line_past_120_columns_in_the_core_is_reported():
    run = ruff_check("--stdin-filename", "resispec/planted.py", "-", source=f"NAME = {'1' * 120!r}\n")
    assert run.returncode == 1 and "E501" in run.stdout, run.stdout + run.stderr


def test_theory_is_checked_too():
    run = ruff_check("--stdin-filename", "theory/planted.py", "-", source=f"NAME = {'1' * 120!r}\n")
    assert run.returncode == 1 and "E501" in run.stdout, run.stdout + run.stderr


@pytest.mark.parametrize(("path", "reported"), [("theory/planted.py", False), ("resispec/planted.py", True)])
def test_math_names_like_l_are_allowed_only_in_the_derivations(path, reported):
    run = ruff_check("--stdin-filename", path, "-", source="l = 1\nprint(l)\n")
    assert (run.returncode == 1 and "E741" in run.stdout) is reported, run.stdout + run.stderr
