"""``python -m resispec.theory`` says on stderr which theorem it checks, before each one, so a pipe sees its
progress (issue 46: 166 s without a line on a loaded machine)."""

from __future__ import annotations

from resispec.theory import report
from resispec.theory.registry import all_theorems


def test_every_theorem_is_announced_on_stderr_before_it_runs(monkeypatch, capsys):
    theorems = all_theorems()[:2]
    monkeypatch.setattr(report, "all_theorems", lambda: theorems)
    results = report.run_all(docs=None)
    err = capsys.readouterr().err.splitlines()
    assert err == [f"theory: [{i + 1}/2] checking {theorem.name}" for i, theorem in enumerate(theorems)]
    assert len(results) == 2
