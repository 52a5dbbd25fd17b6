"""The layer contracts can break: core (`resispec` without its interfaces, the formats included) <- `sim` |
`engine` (siblings that never import each other) <- the interfaces (`resispec.cli`, `resispec.explore`); the
engine's rooms import only downwards; `theory` imports none of them. ``.ci/run`` checks that they hold
(``lint-imports``, the import-linter contracts in pyproject.toml); the test below shows that a wrong-way
import, planted in a copy of the tree, breaks them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter", reason="import-linter is not installed (pip install 'resispec[test]')")

ROOT = Path(__file__).resolve().parents[2]
LINT = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` on ``tree`` in a fresh interpreter, so that it reads that tree's packages."""
    environment = {**os.environ, "COLUMNS": "200"}  # one line per contract in the report
    return subprocess.run([sys.executable, "-c", LINT], cwd=tree, env=environment, capture_output=True, text=True,
                          timeout=120)


def copy_of_the_tree(destination: Path) -> Path:
    """The package's Python files and pyproject.toml (what import-linter reads); the links ``resispec/engine``,
    ``resispec/sim`` and ``resispec/theory`` are followed, so the copy holds one package, as the wheel does."""
    shutil.copytree(ROOT / "resispec", destination / "resispec", ignore=shutil.ignore_patterns("__pycache__"),
                    copy_function=lambda source, target: source.endswith(".py") and shutil.copy2(source, target))
    shutil.copy2(ROOT / "pyproject.toml", destination / "pyproject.toml")
    return destination


def test_a_wrong_way_import_breaks_the_layers(tmp_path):
    """``.ci/run`` runs ``lint-imports`` on the tree itself; this plants the stack's typical break (the engine
    importing the simulator, its sibling) in a copy and sees that contract fail, and only that one."""
    tree = copy_of_the_tree(tmp_path)
    target = tree / "resispec/engine/logs/node_log.py"
    target.write_text(target.read_text() + "import resispec.sim.rounds\n")
    run = lint_imports(tree)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "independent siblings on the core, which sits on the exact reference BROKEN" in run.stdout, run.stdout
    assert run.stdout.count("BROKEN") == 1, run.stdout
