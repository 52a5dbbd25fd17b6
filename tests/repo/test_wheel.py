"""The wheel, installed in a fresh virtual environment with no extras, holds one import name and runs the CLI
(issue 46): built from a copy of the tree with ``pip wheel --no-deps --no-index`` (nothing from the network),
installed with ``pip install --no-deps --no-index`` into a venv that sees the system's packages for the core's
own dependencies (numpy, scipy, numba, array-api-compat: no index is needed), run outside the repository with
every optional package blocked as in tests/resispec/test_no_extras.py. Slow: building and installing take
~30 s on 2 cores."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.resispec.test_no_extras import SAMPLER, SCRIPT, optional_imports

ROOT = Path(__file__).resolve().parents[2]


def _run(*argv, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if check:
        assert result.returncode == 0, (argv, result.stdout[-2000:], result.stderr[-3000:])
    return result


@pytest.mark.slow
def test_the_wheel_installs_only_resispec_and_runs_the_cli_with_no_extras(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", "__pycache__", "out", "build", "dist", "*.egg-info", ".hypothesis", ".pytest_cache"))
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w",
         tmp_path / "wheels", source, cwd=tmp_path)
    (wheel,) = (tmp_path / "wheels").glob("resispec-*.whl")
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"resispec"}, tops
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--system-site-packages", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    _run(python, "-m", "pip", "install", "--no-deps", "--no-index", wheel, cwd=tmp_path)
    work = tmp_path / "elsewhere"
    work.mkdir()
    found = _run(python, "-c", "import resispec, resispec.engine, resispec.sim, resispec.theory; "
                 "print(resispec.__file__)", cwd=work).stdout.strip()
    assert Path(found).is_relative_to(venv), found
    for name in ("engine", "sim", "theory"):
        missing = _run(python, "-c", f"import {name}", cwd=work, check=False)
        assert missing.returncode == 1 and "ModuleNotFoundError" in missing.stderr, (name, missing.stderr)
    assert "audit-sampler" in _run(venv / "bin" / "resispec", "--help", cwd=work).stdout
    (work / "numpy_sampler.py").write_text(SAMPLER)
    runs = [["audit", "--verifier", "rrs", "ears", "--k", "2", "--suite", "quick", "--samples", "2000"],
            ["audit-sampler", "numpy_sampler.py:sps", "--level", "node", "--k", "1", "--rule", "sps",
             "--samples", "1000"]]
    out = _run(python, "-c", SCRIPT.format(blocked=optional_imports(), runs=runs), cwd=work).stdout
    assert out.strip().splitlines()[-1] == "statuses [0, 0] loaded []", out[-2000:]
