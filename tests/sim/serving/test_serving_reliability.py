"""The logged-node sets are complete or refused, every row is checked at the boundary, and nothing that
tested nothing passes (issue 31: items 1-4 and 8 for ``log synth|convert`` and ``audit-log``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import process as futures_process
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resispec.cli import main
from resispec.formats.atomic import STAGING_MARKER
from resispec.formats.node_reader import MANIFEST
from resispec.formats.node_writer import nodes_table
from resispec.formats.nodes import SchemaError
from resispec.sim.serving.pool import descendants, running, worker_pool
from resispec.sim.serving.report import audit_report
from resispec.sim.serving.runner_local import run_local
from resispec.sim.serving.synth import SynthSpec, synth

ROOT = Path(__file__).resolve().parents[3]
ENGINE_LOG = ROOT / "engine" / "data" / "smollm2_decoding_log.npz"
SMALL = dict(kept=8, family="llm:sigma=1,V=32")


@pytest.fixture(scope="module")
def exact_set(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("exact") / "set"
    synth(SynthSpec(rows=400, verifier="rrs", k=2, rows_per_file=200, rows_per_group=100, **SMALL), out)
    return out


def _columns(rows: int, verifier: str = "rrs", k: int = 2, first_id: int = 0) -> dict:
    """Valid nodes: 3 kept ids of p = q = 0.3, tails 0.1, k candidates 0, 1, ..., emitted the first."""
    return {"node_id": np.arange(first_id, first_id + rows), "verifier": verifier,
            "token_ids": np.tile(np.arange(3), (rows, 1)), "p": np.full((rows, 3), 0.3),
            "q": np.full((rows, 3), 0.3), "p_tail": np.full(rows, 0.1), "q_tail": np.full(rows, 0.1),
            "candidates": np.tile(np.arange(k), (rows, 1)), "emitted": np.zeros(rows, dtype=int),
            "accepted_index": np.zeros(rows, dtype=int)}


def _one_line_exit_2(argv: list[str], capsys) -> str:
    status = main(argv)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_the_same_shard_twice_is_refused_naming_the_repeat_and_skipped_only_when_asked(exact_set, tmp_path):
    doubled = tmp_path / "doubled"
    doubled.mkdir()
    shard = sorted(exact_set.glob("*.parquet"))[0]
    shutil.copy(shard, doubled / "a.parquet")
    shutil.copy(shard, doubled / "b.parquet")
    with pytest.raises(SchemaError, match=r"b.parquet row group 0: row 0: field node_id: id 0 repeats "
                                          r".*a.parquet row group 0 row 0"):
        run_local(doubled, workers=1)
    merged = run_local(doubled, workers=1, skip_bad=True)
    assert merged.rows == 200 and [where.split("/")[-1] for where, _ in merged.skipped] == [
        "b.parquet row group 0", "b.parquet row group 1"]


def test_an_emission_of_p_zero_is_impossible_and_rejects(tmp_path):
    columns = _columns(400)
    columns["p"][:, 2], columns["p_tail"][:] = 0.0, 0.4  # token 2 has p = 0
    columns["emitted"][7], columns["accepted_index"][7] = 2, 1  # ... and node 7 emitted it
    columns["candidates"][7] = [0, 2]
    pq.write_table(nodes_table(columns, 10), tmp_path / "one.parquet")
    report = audit_report(run_local(tmp_path, workers=1))
    assert report["verifiers"][0]["impossible"] == 1
    assert report["verdict"] == "FAIL" and not report["passed"]


@pytest.mark.parametrize("verifier, k, candidates, message", [
    ("sps", 1, [0, 1], "field candidates: 2 candidates, but sps takes at most 1"),
    ("rrs_wor", 2, [1, 1], "field candidates: a repeated candidate, but rrs_wor drafts wor"),
    ("topk", 2, [0, 0], "field candidates: a repeated candidate, but topk drafts topk"),
])
def test_candidates_against_the_verifiers_drafting_rule(tmp_path, verifier, k, candidates, message):
    columns = _columns(30, verifier, k)
    columns["candidates"] = [np.arange(k)] * 12 + [np.array(candidates)] + [np.arange(k)] * 17
    columns["emitted"][12] = candidates[0]
    pq.write_table(nodes_table(columns, 10), tmp_path / "rows.parquet", row_group_size=10)
    with pytest.raises(SchemaError, match=rf"rows.parquet row group 1: row 2: {message}"):
        run_local(tmp_path, workers=1)
    assert run_local(tmp_path, workers=1, skip_bad=True).rows == 20


def test_a_rerun_with_fewer_rows_leaves_none_of_the_old_shards(tmp_path, capsys):
    out = tmp_path / "set"
    synth(SynthSpec(rows=300, verifier="rrs", rows_per_file=100, **SMALL), out)
    synth(SynthSpec(rows=100, verifier="rrs", rows_per_file=100, **SMALL), out)
    assert sorted(path.name for path in out.iterdir()) == [MANIFEST, "part-00000.parquet"]
    assert json.loads((out / MANIFEST).read_text())["rows"] == 100
    assert run_local(out, workers=1).rows == 100
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".")]  # no staging or old folder left
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(ValueError, match="not a set written by log synth"):
        synth(SynthSpec(rows=10, verifier="rrs", **SMALL), mine)
    assert (mine / "notes.txt").read_text() == "keep"


@pytest.mark.parametrize("damage, message", [
    (lambda out: (out / "part-00001.parquet").unlink(), "part-00001.parquet of run .* is missing"),
    (lambda out: shutil.copy(out / "part-00000.parquet", out / "part-00009.parquet"), "part-00009.parquet is not part"),
    (lambda out: (out / STAGING_MARKER).write_text(""), "is a staging folder"),
])
def test_a_mixed_incomplete_or_staging_set_is_refused_with_one_line(exact_set, tmp_path, capsys, damage, message):
    out = tmp_path / "copy"
    shutil.copytree(exact_set, out)
    damage(out)
    line = _one_line_exit_2(["audit-log", str(out), "--workers", "1", "--skip-bad"], capsys)
    assert line.startswith("resispec audit-log: error: ") and any(
        __import__("re").search(message, line) for _ in [0]), line


def test_a_set_without_rows_tested_nothing(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    pq.write_table(nodes_table(_columns(0), 10), empty / "zero.parquet")
    assert "no rows to audit" in _one_line_exit_2(["audit-log", str(empty), "--workers", "1"], capsys)
    assert "no rows to convert" in _one_line_exit_2(["log", "convert", str(empty), str(tmp_path / "x.npz")], capsys)
    assert audit_report(run_local(empty, workers=1))["verdict"] == "UNTESTED"


def test_too_few_nodes_are_untested_not_passed(tmp_path, capsys):
    pq.write_table(nodes_table(_columns(4), 10), tmp_path / "four.parquet")
    status = main(["audit-log", str(tmp_path), "--workers", "1"])
    captured = capsys.readouterr()
    assert status == 2 and "UNTESTED" in captured.out and "none (untested)" in captured.out
    assert captured.err.strip().splitlines()[-1].startswith("resispec audit-log: error: untested: the PIT of rrs")


@pytest.mark.parametrize("direction", ["npz to parquet", "parquet to npz"])
def test_a_failed_convert_leaves_the_previous_output(tmp_path, capsys, monkeypatch, direction):
    parquet, npz = tmp_path / "log.parquet", tmp_path / "log.npz"
    assert main(["log", "convert", str(ENGINE_LOG), str(parquet), "--verifier", "resispec"]) == 0
    assert main(["log", "convert", str(parquet), str(npz)]) == 0
    argv, out = ((["log", "convert", str(ENGINE_LOG), str(parquet), "--verifier", "resispec"], parquet)
                 if direction == "npz to parquet" else (["log", "convert", str(parquet), str(npz)], npz))
    before = out.read_bytes()

    def full_disk(table_or_handle, where=None, **options):
        with open(where, "wb") if where is not None else table_or_handle as handle:
            handle.write(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq, "write_table", full_disk)
    monkeypatch.setattr(np, "savez_compressed", full_disk)
    assert "No space left on device" in _one_line_exit_2(argv, capsys)
    assert out.read_bytes() == before and sorted(tmp_path.iterdir()) == [npz, parquet]


def _interrupt(argv: list[str], ready, cwd: Path) -> tuple[int, str, list[int]]:
    """Run ``resispec argv`` in a subprocess, send SIGINT once ``ready()`` holds; (status, stderr, children)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "resispec", *argv], cwd=cwd, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not ready(process.pid) and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.1)
    time.sleep(1.0)
    children = descendants(process.pid)
    process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=30)  # a row group in flight takes ~2 s idle, 5x that under a full suite
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail("SIGINT did not end the command within 30 s")
    return process.returncode, err, children


def _alive(pids: list[int]) -> list[int]:
    return [pid for pid in pids if running(pid)]


def test_sigint_during_synth_leaves_nothing_and_no_process(tmp_path):
    status, err, children = _interrupt(
        ["log", "synth", "--rows", "400000", "--rows-per-file", "20000", "--verifier", "rrs", "--workers", "2",
         "--out", "set"], lambda pid: any(path.name.startswith(".set.staging") for path in tmp_path.iterdir()),
        tmp_path)
    assert status == 130 and err.strip().splitlines() == ["resispec log synth: interrupted; nothing half-written is "
                                                          "left"], err
    assert children and not _alive(children)
    assert list(tmp_path.iterdir()) == []


def test_sigint_during_audit_log_ends_in_one_line(tmp_path):
    big = tmp_path / "big"  # row groups of 100 nodes (~2 s each): Ctrl-C lands inside a task or between two
    synth(SynthSpec(rows=4000, verifier="rrs_wor", k=3, rows_per_file=1000, rows_per_group=100, **SMALL), big)
    status, err, children = _interrupt(["audit-log", str(big), "--workers", "2"],
                                       lambda pid: len(descendants(pid)) >= 2, tmp_path)
    assert status == 130 and err.strip().splitlines()[-1].endswith("interrupted; nothing half-written is left"), err
    assert "Traceback" not in err and children and not _alive(children)


def test_an_interrupted_pool_leaves_no_process_and_no_manager_thread():
    """Ctrl-C between tasks: the block re-raises only once the workers and the executor's manager thread
    are gone, so the interpreter's exit hook never races the thread for its wake-up pipe (sim/serving/pool.py)."""
    for _ in range(5):
        with pytest.raises(KeyboardInterrupt), worker_pool(2) as pool:
            futures = [pool.submit(time.sleep, 0.01) for _ in range(50)]
            futures[0].result()
            processes = list(pool._processes.values())
            raise KeyboardInterrupt
        assert processes and not any(process.is_alive() for process in processes)
        assert not [thread for thread in threading.enumerate()
                    if isinstance(thread, futures_process._ExecutorManagerThread)]


MALFORMED = st.sampled_from(["p_negative", "p_sum", "q_nan", "emitted_vocab", "accepted_index", "token_repeat",
                             "token_vocab", "no_candidates", "verifier_unknown", "node_repeat", "fine"])


@settings(max_examples=30)
@given(kinds=st.lists(MALFORMED, min_size=1, max_size=3), row=st.integers(0, 19), data=st.data())
def test_random_malformed_shards_give_a_named_error_or_a_correct_verdict(tmp_path_factory, kinds, row, data):
    """A shard of 20 valid rows with random damage: ``run_local`` names the file, row group, row and field
    of the first damaged row, or (with only the "fine" damage) the set is audited."""
    columns = _columns(20)
    columns["candidates"] = [np.array([0, 1]) for _ in range(20)]
    damage = {
        "p_negative": lambda: columns["p"].__setitem__((row, 0), -0.3),
        "p_sum": lambda: columns["p"].__setitem__((row, 1), 0.9),
        "q_nan": lambda: columns["q"].__setitem__((row, 2), np.nan),
        "emitted_vocab": lambda: columns["emitted"].__setitem__(row, 10),
        "accepted_index": lambda: columns["accepted_index"].__setitem__(row, 5),
        "token_repeat": lambda: columns["token_ids"].__setitem__((row, 1), columns["token_ids"][row, 0]),
        "token_vocab": lambda: columns["token_ids"].__setitem__((row, 2), 99),
        "no_candidates": lambda: columns["candidates"].__setitem__(row, np.zeros(0, dtype=int)),
        "verifier_unknown": lambda: columns.__setitem__("verifier", ["rrs"] * row + ["bogus"] + ["rrs"] * (19 - row)),
        "node_repeat": lambda: columns["node_id"].__setitem__(row, (row + 1) % 20),
        "fine": lambda: None,
    }
    for kind in kinds:
        damage[kind]()
    folder = tmp_path_factory.mktemp("malformed")
    groups = data.draw(st.sampled_from([5, 20]))
    pq.write_table(nodes_table(columns, 10), folder / "shard.parquet", row_group_size=groups)
    try:
        merged = run_local(folder, workers=1)
    except SchemaError as error:
        assert set(kinds) != {"fine"}
        message = str(error)
        assert "shard.parquet row group" in message and "\n" not in message
        return
    assert set(kinds) == {"fine"}
    assert merged.rows == 20 and audit_report(merged)["verdict"] in ("PASS", "FAIL")


@pytest.mark.slow
def test_sigint_during_audit_log_on_ray_ends_in_one_line_and_its_instance(tmp_path):
    """Ctrl-C while Ray tasks run: one line, exit 130, and every process of the instance the run started
    (GCS, raylet, workers) gone."""
    big = tmp_path / "big"  # rrs_wor at k = 3 costs ~20 ms a node (its LP optimum): the tasks still run at Ctrl-C
    synth(SynthSpec(rows=4000, verifier="rrs_wor", k=3, rows_per_file=1000, rows_per_group=100, **SMALL), big)

    def tasks_running(pid: int) -> bool:
        return bool(descendants(pid, "raylet") and descendants(pid, "ray::unit_stats"))

    status, err, children = _interrupt(["audit-log", str(big), "--engine", "ray", "--workers", "2"], tasks_running,
                                       tmp_path)
    assert status == 130 and err.strip().splitlines()[-1].endswith("interrupted; nothing half-written is left"), err
    assert "Traceback" not in err and len(children) >= 3 and not _alive(children)



def test_a_row_past_the_candidate_limit_is_named_by_file_and_row_group_and_skipped_when_asked(tmp_path, capsys):
    columns = _columns(40)
    columns["candidates"] = [np.arange(2)] * 39 + [np.zeros(1025, dtype=int)]  # MAX_CANDIDATES + 1 in row 39
    (tmp_path / "set").mkdir()
    pq.write_table(nodes_table(columns, 10), tmp_path / "set" / "a.parquet", row_group_size=10)
    line = _one_line_exit_2(["audit-log", str(tmp_path / "set"), "--workers", "1"], capsys)
    assert line.endswith("a.parquet row group 3: row 9: field candidates: 1025 candidates, past the limit "
                         "MAX_CANDIDATES = 1024 (resispec.limits)")
    merged = run_local(tmp_path / "set", workers=1, skip_bad=True)
    assert merged.rows == 30 and [where.split("/")[-1] for where, _ in merged.skipped] == ["a.parquet row group 3"]
    main(["audit-log", str(tmp_path / "set"), "--workers", "1", "--skip-bad"])
    assert "skipped 1 bad file(s) or row group(s) (--skip-bad)" in capsys.readouterr().out


def test_a_parquet_dataset_folder_is_a_shard_alone_or_in_a_set(exact_set, tmp_path):
    """Spark and Ray write a folder named ``*.parquet`` of part files (and ``_SUCCESS``)."""
    dataset = tmp_path / "set" / "nodes.parquet"
    dataset.mkdir(parents=True)
    for index, shard in enumerate(sorted(exact_set.glob("*.parquet"))):
        shutil.copy(shard, dataset / f"part-{index:05d}.snappy.parquet")
    (dataset / "_SUCCESS").write_text("")
    assert run_local(dataset, workers=1).rows == 400
    assert run_local(tmp_path / "set", workers=1).rows == 400
