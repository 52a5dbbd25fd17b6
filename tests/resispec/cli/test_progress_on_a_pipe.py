"""Every command that can run past ~10 s reports progress on stderr when stderr is a pipe, not a terminal (issue
46): each runs here in a subprocess with stderr captured and ``RESISPEC_PROGRESS_SECONDS=0`` (a line at every
step, so a short run shows what a long one prints every 10 s). The engine's commands (``generate``,
``audit-stream``, ``bench engine``) report through the same ``resispec.progress`` and are run in
tests/engine/; ``theory``'s lines are checked in tests/theory/test_theory_progress.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _stderr(*argv: str, cwd: Path = ROOT) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RESISPEC_PROGRESS_SECONDS": "0"}
    result = subprocess.run([sys.executable, "-m", "resispec", *argv], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stderr


def test_audit_reports_each_row():
    err = _stderr("audit", "--verifier", "rrs", "ears", "--k", "2", "--suite", "quick", "--samples", "2000")
    assert "[1/2] rrs k=2: PASS" in err and "[2/2] ears k=2: caught" in err


def test_audit_sampler_reports_its_calls():
    err = _stderr("audit-sampler", "tests/resispec/audit/toy_samplers.py:sps_node", "--level", "node", "--k", "1",
                  "--rule", "sps", "--samples", "300")
    assert "audit-sampler node: 1/" in err and "about" in err and "[done]" in err


def test_log_synth_and_audit_log_report_their_rows(tmp_path):
    out = tmp_path / "log"
    assert "synth: 3000/3000 rows (100 %)" in _stderr("log", "synth", "--rows", "3000", "--verifier", "rrs",
                                                      "--out", str(out))
    assert "audit-log: 3000 rows" in _stderr("audit-log", str(out))


@pytest.mark.parametrize("command", ["drift", "compare"])
def test_sim_reports_each_source_verifier_and_k(command, tmp_path):
    err = _stderr("sim", command, "--source", "dirichlet:alpha=1,V=16", "--verifiers", "rrs", "--k", "2",
                  "--pairs", "20", "--out", str(tmp_path))
    assert "rrs k=2: acceptance" in err
