"""The layers hold: core (`resispec` without its interfaces, the formats included) <- `sim` | `engine`
(siblings that never import each other) <- the interfaces (`resispec.cli`, `resispec.explore`); the engine's
rooms import only downwards; `theory` imports none of them. The contracts are the
import-linter ones in pyproject.toml (``lint-imports`` runs the same); each wrong-way import below,
planted in a copy of the tree, breaks them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter", reason="import-linter is not installed (pip install 'resispec[test]')")

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("resispec", "sim", "engine", "theory")
LINT = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` on ``tree`` in a fresh interpreter, so that it reads that tree's packages."""
    environment = {**os.environ, "COLUMNS": "200"}  # one line per contract in the report
    return subprocess.run([sys.executable, "-c", LINT], cwd=tree, env=environment, capture_output=True, text=True,
                          timeout=120)


def test_the_layers_hold():
    run = lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr


def copy_of_the_tree(destination: Path) -> Path:
    """The packages' Python files and pyproject.toml (what import-linter reads)."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, destination / package, ignore=shutil.ignore_patterns("__pycache__"),
                        ignore_dangling_symlinks=True,
                        copy_function=lambda source, target: source.endswith(".py") and shutil.copy2(source, target))
    shutil.copy2(ROOT / "pyproject.toml", destination / "pyproject.toml")
    return destination


STACK = "independent siblings on the core BROKEN"
WRONG_WAY = {
    "the core imports sim": ("resispec/roots.py", "import sim.batch\n", STACK),
    "the core imports the engine": ("resispec/formats/stats.py", "import engine.runtime.tree\n", STACK),
    "the core imports the explorer": ("resispec/bounds.py", "import resispec.explore.model\n", STACK),
    "sim imports engine": ("sim/batch.py", "import engine.runtime.tree\n", STACK),
    "engine imports sim": ("engine/logs/node_log.py", "import sim.rounds\n", STACK),
    "engine imports the CLI": ("engine/runtime/tree.py", "import resispec.cli.table\n", STACK),
    "a low room imports a higher one": ("engine/runtime/tree.py", "import engine.decode.processing\n",
                                        "no import runs back up BROKEN"),
    "theory imports the core": ("theory/registry.py", "import resispec.bounds\n",
                                "imports none of the float code BROKEN"),
    "a core module no layer lists": ("resispec/unlisted.py", "", "names all of the core) BROKEN"),
}


@pytest.mark.parametrize("case", sorted(WRONG_WAY))
def test_a_wrong_way_import_breaks_the_layers(case, tmp_path):
    path, line, broken = WRONG_WAY[case]
    tree = copy_of_the_tree(tmp_path)
    target = tree / path
    target.write_text((target.read_text() if target.exists() else "") + line)
    run = lint_imports(tree)
    assert run.returncode == 1 and broken in run.stdout, run.stdout + run.stderr
