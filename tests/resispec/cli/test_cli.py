"""The CLI: the audit job and the verify benchmark run end to end and report what they claim."""

from __future__ import annotations

import json
import time

from resispec.cli import main
from tests.timing_records import check_timing_records


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


def test_bench_verify_prints_one_record_per_verifier_vocabulary_and_k(capsys):
    argv = ["bench", "verify", "--vocab", "64", "1024", "--k", "2", "4", "--repeats", "3",
            "--verifier", "resispec", "rrs"]
    start = time.perf_counter()
    assert main([*argv, "--json"]) == 0
    wall = time.perf_counter() - start
    check_timing_records(
        json.loads(capsys.readouterr().out),
        fields=["verifier", "vocab", "k", "verify_seconds", "softmax_seconds", "ratio"],
        configurations=[(name, vocab, k) for vocab in (64, 1024) for name in ("resispec", "rrs") for k in (2, 4)],
        times=["verify_seconds", "softmax_seconds"], ratios={"ratio": ("verify_seconds", "softmax_seconds")},
        repeats=3, wall_seconds=wall)
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["V", "verifier", "k=2", "k=4", "softmax", "us"]
    rows = [line.split() for line in lines[2:6]]
    assert [row[:2] for row in rows] == [["64", "resispec"], ["64", "rrs"], ["1024", "resispec"], ["1024", "rrs"]]
    assert all(float(cell) > 0 for row in rows for cell in row[2:])
    assert lines[6] == "" and lines[7].startswith("cells: median time of one verify")


def test_version_prints_the_package_version(capsys):
    from importlib.metadata import version

    import resispec

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"resispec {resispec.__version__}" == f"resispec {version('resispec')}"
