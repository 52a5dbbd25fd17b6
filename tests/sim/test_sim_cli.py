"""``resispec sim drift|compare`` and ``resispec bench sim`` end to end: JSON records, CSV and PNG files."""

from __future__ import annotations

import csv
import json
import time

import pytest

from resispec.cli import main
from tests.timing_records import check_timing_records


def read_json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


VERIFIERS = ("rrs", "rrs_wor", "spectr", "resispec", "pooled", "resispec_wor", "pooled_wor", "resispec_paper")


def test_drift_json_records_and_files(tmp_path, capsys):
    status = main(["sim", "drift", "--source", "llm:V=32", "--source", "zipf:V=32,mode=perturb", "--pairs", "12",
                   "--k", "3", "--samples", "16", "--out", str(tmp_path), "--json"])
    report = read_json(capsys)
    assert status == 0 and report["command"] == "drift"
    records = report["records"]
    assert {(r["source"].split(":")[0], r["verifier"]) for r in records} == {
        (source, verifier) for source in ("llm", "zipf") for verifier in VERIFIERS}
    for record in records:
        steps = 1 if record["verifier"] in ("pooled", "pooled_wor") else 3  # one selection step
        assert record["k"] == 3 and record["pairs"] == 12 and len(record["curve"]) == steps
        assert record["sequential"] == (steps == 3)
        assert record["biased"] == (record["verifier"] == "resispec_paper")
        for key in ("acceptance", "iid_optimum", "sequential_optimum", "wor_optimum", "ratio_to_optimum"):
            assert 0 <= record[key] <= 2, key
        low, high = record["acceptance_ci"]
        assert low <= record["acceptance"] <= high
        assert record["wor_optimum_method"] == "ratio-prefix bound (upper bound)"  # 32 * 31 * 30 tuples > 2000
    by_name = {(r["source"][:3], r["verifier"]): r for r in records}
    for source in ("llm", "zip"):
        pooled, resispec = by_name[source, "pooled"], by_name[source, "resispec"]
        assert pooled["acceptance"] == pytest.approx(pooled["iid_optimum"])
        assert pooled["share_of_gap"] == pytest.approx(1)
        assert pooled["max_gain_over_resispec"] >= pooled["gain_over_resispec"] >= 0
        assert resispec["gain_over_resispec"] == 0 and by_name[source, "rrs_wor"]["share_of_gap"] == 0
        assert 0 < by_name[source, "resispec_wor"]["share_of_gap"] < 1
        assert by_name[source, "pooled_wor"]["acceptance"] <= by_name[source, "pooled_wor"]["wor_optimum"] + 1e-9
    for name in ("drift.csv", "drift_summary.csv", "drift_curves.png", "residual_drift.png", "optimum_gap.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    with open(tmp_path / "drift.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 * (6 * 3 + 2) and {"conditional_acceptance_low", "residual_tv", "step"} <= set(rows[0])


def test_compare_json_with_tree_on_the_logged_sample(tmp_path, capsys):
    status = main(["sim", "compare", "--source", "logged:sample", "--pairs", "10", "--k", "1", "2",
                   "--verifiers", "rrs", "resispec", "resispec_paper", "--tree", "2,1", "--samples", "16",
                   "--out", str(tmp_path), "--json"])
    report = read_json(capsys)
    assert status == 0
    assert [(r["verifier"], r["k"]) for r in report["records"]] == [
        (v, k) for v in ("rrs", "resispec", "resispec_paper") for k in (1, 2)]
    resispec = [r for r in report["records"] if r["verifier"] == "resispec"]
    assert all(r["acceptance"] == pytest.approx(r["sequential_optimum"]) for r in resispec)
    assert [t["verifier"] for t in report["tree"]] == ["rrs", "resispec", "resispec_paper"]
    assert all(t["replay_starts"] == 9 and t["nodes"] == 4 for t in report["tree"])
    for name in ("compare.csv", "tree.csv", "acceptance_vs_k.png", "optimum_gap.png"):
        assert (tmp_path / name).stat().st_size > 0, name


@pytest.mark.slow
def test_drift_runs_with_no_arguments_but_the_output_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["sim", "drift"]) == 0
    out = capsys.readouterr().out
    assert "P(accept candidate i | 1..i-1 rejected)" in out and "resispec_paper (biased)" in out
    assert "pooled (one selection step)" in out
    assert (tmp_path / "out" / "sim" / "drift_curves.png").exists()


def test_json_is_strict_when_no_pair_reaches_a_step(tmp_path, capsys):
    assert main(["sim", "drift", "--source", "llm:sigma=0,V=16", "--pairs", "4", "--k", "2", "--verifiers", "rrs",
                 "--out", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out, parse_constant=lambda name: pytest.fail(f"non-strict {name}"))
    (record,) = report["records"]
    assert record["acceptance"] == 1.0 and record["curve"][1]["conditional_acceptance"] is None


def test_compare_table(tmp_path, capsys):
    assert main(["sim", "compare", "--source", "dirichlet:V=6", "--pairs", "6", "--k", "2", "3",
                 "--tree", "2", "--enumerate", "300", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "alpha*-WOR" in out and "seq WOR opt" in out and "accepted tokens per target forward" in out
    assert "monte carlo" not in out  # 6^3 i.i.d. and 6 * 5 * 4 WOR tuples: enumerated
    assert "largest per-pair gain" in out and "pooled" in out


@pytest.mark.parametrize("argv, message", [
    (["sim", "drift", "--source", "gauss:V=3"], "unknown family"),
    (["sim", "compare", "--tree", "2,0"], "tree shape"),
    (["sim", "drift", "--pairs", "0"], "pairs"),
    (["sim", "drift", "--enumerate", "0"], "--enumerate"),
])
def test_bad_arguments_exit_2_with_a_message(argv, message, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


def test_an_output_path_that_is_a_file_is_reported(tmp_path, capsys):
    (tmp_path / "taken").write_text("")
    argv = ["sim", "drift", "--pairs", "3", "--k", "2", "--verifiers", "rrs", "--out", str(tmp_path / "taken")]
    assert main(argv) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_bench_sim_prints_one_record_per_verifier(capsys):
    start = time.perf_counter()
    assert main(["bench", "sim", "--pairs", "6", "--vocab", "512", "--chunk", "3", "--repeats", "1", "--json"]) == 0
    wall = time.perf_counter() - start
    check_timing_records(
        read_json(capsys),
        fields=["verifier", "pairs", "vocab", "k", "seconds", "softmax_seconds", "ratio", "pairs_per_second"],
        configurations=[("rrs", 6, 512, 8), ("resispec", 6, 512, 8)], times=["seconds", "softmax_seconds"],
        ratios={"ratio": ("seconds", "softmax_seconds"), "pairs_per_second": ("pairs", "seconds")}, repeats=1,
        wall_seconds=wall)


def test_a_failure_while_writing_leaves_no_partial_output(tmp_path, capsys, monkeypatch):
    import resispec.sim.plots

    def broken_plot(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(resispec.sim.plots, "plot_gaps", broken_plot)
    status = main(["sim", "drift", "--pairs", "3", "--k", "2", "--verifiers", "rrs", "--out", str(tmp_path / "out")])
    assert status == 2 and "disk full" in capsys.readouterr().err
    assert list((tmp_path / "out").iterdir()) == []  # neither drift.csv nor the staging folder stays
