"""The code passes ruff with the rules in pyproject.toml (``[tool.ruff]``), outside the files its
``extend-exclude`` list still leaves to other work."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

if importlib.util.find_spec("ruff") is None:
    pytest.skip("ruff is not installed (pip install 'resispec[test]')", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]


def ruff_check(*arguments: str, source: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *arguments], cwd=ROOT, input=source,
                          capture_output=True, text=True, timeout=120)


def test_ruff_finds_nothing():
    run = ruff_check(".")
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_line_past_120_columns_in_the_core_is_reported():
    run = ruff_check("--stdin-filename", "resispec/planted.py", "-", source=f"NAME = {'1' * 120!r}\n")
    assert run.returncode == 1 and "E501" in run.stdout, run.stdout + run.stderr


def test_a_file_on_the_exclusion_list_is_left_alone():
    run = ruff_check("--stdin-filename", "theory/planted.py", "-", source=f"NAME = {'1' * 120!r}\n")
    assert run.returncode == 0, run.stdout + run.stderr
