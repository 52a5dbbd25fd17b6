"""The CLI: the audit job and the verify benchmark run end to end and report what they claim."""

from __future__ import annotations

import json

from resispec.cli import main


def test_audit_json_on_the_quick_suite(capsys):
    status = main(["audit", "--suite", "quick", "--samples", "2000", "--k", "4", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 0 and report["passed"]
    assert {row["verifier"] for row in report["rows"]} >= {"resispec", "resispec_paper", "ears"}
    assert all(row["verdict"] == "PASS" for row in report["rows"] if row["claims_exact"])


def test_audit_table_names_each_column(capsys):
    status = main(["audit", "--verifier", "resispec", "resispec_paper", "--suite", "quick", "--samples", "1500"])
    out = capsys.readouterr().out
    assert status == 0
    for column in ("verifier", "max exact-law err", "sampled TV", "chi2 p", "acc / iid opt", "verdict"):
        assert column in out
    assert "caught" in out and "verdict: PASS" in out


def test_bench_verify_prints_ratios(capsys):
    assert main(["bench", "verify", "--vocab", "1024", "--k", "2", "--repeats", "3", "--verifier", "resispec", "--json"]) == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert record["verifier"] == "resispec" and record["ratio"] > 0
