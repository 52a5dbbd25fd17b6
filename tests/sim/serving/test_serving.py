"""``resispec.sim.serving``: the Parquet layout, conversion, synth, exactly mergeable statistics and the verdicts."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from resispec.cli import main
from resispec.formats.node_reader import read_unit, units
from resispec.formats.node_writer import nodes_table, write_nodes
from resispec.formats.nodes import SchemaError, check_schema, from_top_logprobs
from resispec.formats.pairs import read_logged
from resispec.sim.serving.convert import npz_to_parquet, parquet_to_npz
from resispec.sim.serving.exact import as_float, fixed_sum, fixed_sums, node_uniforms
from resispec.sim.serving.report import audit_report
from resispec.sim.serving.runner_local import run_local
from resispec.sim.serving.synth import SynthSpec, synth
from resispec.verifiers import VERIFIERS

ENGINE_LOG = Path(__file__).resolve().parents[3] / "engine" / "data" / "smollm2_decoding_log.npz"
SMALL = dict(kept=8, family="llm:sigma=1,V=32")


def report_of(path, **options) -> dict:
    return audit_report(run_local(path, workers=1, **options))


@pytest.fixture(scope="module")
def exact_set(tmp_path_factory) -> Path:
    """600 resispec nodes at k = 4 over 3 files of 2 row groups each."""
    out = tmp_path_factory.mktemp("exact")
    synth(SynthSpec(rows=600, verifier="resispec", rows_per_file=200, rows_per_group=100, **SMALL), out)
    return out


def test_fixed_point_sums_do_not_depend_on_grouping():
    values = np.random.default_rng(0).random(1000) ** 3
    whole = fixed_sum(values)
    parts = sum(fixed_sum(values[start:start + 37]) for start in range(0, 1000, 37))
    assert whole == parts and abs(as_float(whole) - math.fsum(values)) < 1e-15
    assert fixed_sums(np.stack([values, 1 - values], axis=1)) == [whole, fixed_sum(1 - values)]
    with pytest.raises(ValueError, match="values"):
        fixed_sum(np.array([np.nan]))


def test_node_uniforms_are_keyed_by_id_and_uniform():
    from scipy import stats

    ids = np.arange(20000)
    u = node_uniforms(ids, 3)
    assert np.array_equal(node_uniforms(ids[::-1], 3), u[::-1])  # a function of the id, not of the batch
    assert not np.array_equal(node_uniforms(ids, 4), u)
    assert stats.kstest(u, "uniform").pvalue > 1e-3 and 0 <= u.min() and u.max() < 1


def test_parquet_layout_and_schema_errors(exact_set, tmp_path):
    found, bad = units(exact_set)
    assert [unit.rows for unit in found] == [100] * 6 and bad == []
    batch = read_unit(found[0])
    assert batch.p.shape == (100, 9) and np.allclose(batch.p.sum(axis=1), 1)
    assert (batch.emitted_column <= 8).all() and set(batch.rows_by_k) == {4}
    table = pq.read_table(found[0].path)
    check_schema(table.schema, "ok")
    with pytest.raises(SchemaError, match="elsewhere: not a resispec-nodes/1 file"):
        check_schema(table.schema.remove_metadata(), "elsewhere")
    with pytest.raises(SchemaError, match="column 'emitted' is missing"):
        check_schema(table.drop_columns(["emitted"]).schema, "x")


def write_bad_shard(directory: Path, rows: int = 50) -> Path:
    """A valid-schema file whose second row group has a row where p sums to 2."""
    columns = {"node_id": np.arange(10**6, 10**6 + rows), "verifier": "rrs",
               "token_ids": np.tile(np.arange(3), (rows, 1)), "p": np.full((rows, 3), 0.3),
               "q": np.full((rows, 3), 0.3), "p_tail": np.full(rows, 0.1), "q_tail": np.full(rows, 0.1),
               "candidates": np.zeros((rows, 2), dtype=int), "emitted": np.zeros(rows, dtype=int),
               "accepted_index": np.zeros(rows, dtype=int)}
    table = nodes_table(columns, 10)
    p = np.full((rows, 3), 0.3)
    p[rows - 1] = 0.6  # sums to 1.9 with its tail
    columns["p"] = p
    path = directory / "bad.parquet"
    pq.write_table(nodes_table(columns, 10), path, row_group_size=rows // 2)
    with pytest.raises(SchemaError, match=r"rows from 0: row 49: p sums to 1.9"):
        write_nodes(directory / "refused.parquet", nodes_table(columns, 10), rows)
    assert table.num_rows == rows
    return path


def test_a_bad_row_group_is_named_and_skipped_only_when_asked(exact_set, tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    for file in sorted(exact_set.glob("*.parquet")):
        (shards / file.name).write_bytes(file.read_bytes())
    bad = write_bad_shard(shards)
    (shards / "notes.parquet").write_text("not parquet")
    with pytest.raises(SchemaError, match="notes.parquet"):
        run_local(shards, workers=1)
    (shards / "notes.parquet").unlink()
    with pytest.raises(SchemaError, match=rf"{bad} row group 1: row 24: p sums to 1.9"):
        run_local(shards, workers=1)
    merged = run_local(shards, workers=1, skip_bad=True)
    assert merged.rows == 625 and [where for where, _ in merged.skipped] == [f"{bad} row group 1"]
    report = audit_report(merged)
    assert report["skipped"][0]["where"] == f"{bad} row group 1"
    assert {(r["verifier"], r["nodes"]) for r in report["verifiers"]} == {("resispec", 600), ("rrs", 25)}


def test_statistics_do_not_depend_on_sharding_or_workers(exact_set, tmp_path):
    table = pq.read_table(exact_set)  # the three files as one table, one file, other row groups
    single = tmp_path / "single.parquet"
    pq.write_table(table, single, row_group_size=600 // 7)
    reference = run_local(exact_set, workers=1)
    for other in (run_local(single, workers=1), run_local(exact_set, workers=2)):
        assert set(other.groups) == set(reference.groups)
        for key, tally in reference.groups.items():
            assert np.array_equal(other.groups[key].pit, tally.pit)
            assert other.groups[key].steps == tally.steps and other.groups[key].acceptance == tally.acceptance
            assert other.groups[key].optimum == tally.optimum
        assert audit_report(other) == audit_report(reference)


def test_report_of_an_exact_set(exact_set):
    report = report_of(exact_set)
    assert report["passed"] and report["rows"] == 600
    (record,) = report["verifiers"]
    (group,) = record["groups"]
    assert group["law_method"] == "exact" and group["k"] == 4
    assert abs(group["acceptance_z"]) < 3 and group["step_law_pvalue"] > 1e-3
    assert group["observed_acceptance"] <= group["optimum"] + 0.05
    drift = group["drift"]
    assert [row["step"] for row in drift] == [1, 2, 3, 4] and drift[0]["observed_reached"] == 600
    for row in drift:
        low, high = row["conditional_acceptance_ci"]
        assert low <= row["conditional_acceptance"] <= high


@pytest.mark.parametrize("name", [name for name, cls in VERIFIERS.items() if cls.claims_exact])
def test_every_exact_verifier_of_the_registry_passes(name, tmp_path):
    k = min(2, VERIFIERS[name].max_k or 2)
    synth(SynthSpec(rows=400, verifier=name, k=k, kept=4, family="llm:sigma=1,V=16", seed=1), tmp_path)
    report = report_of(tmp_path)
    (record,) = report["verifiers"]
    assert report["passed"], record
    (group,) = record["groups"]
    assert group["bound_pvalue"] == 1.0 or group["bound_passed"]
    if group["expected_acceptance"] == group["expected_acceptance"]:  # computed (not NaN)
        assert abs(group["acceptance_z"]) < 4


@pytest.mark.parametrize("name, rows, k, options", [
    ("resispec_paper", 1000, 4, SMALL),
    # rrs_skip_dup's bias shows where duplicates are frequent and the pair is peaky: KS distance of the
    # ratio-ordered PIT about 0.03 here (about 0.01 on llm:sigma=1 pairs, which needs ~50,000 nodes)
    ("rrs_skip_dup", 6000, 6, dict(kept=4, family="dirichlet:alpha=0.3,V=5")),
])
def test_sets_of_biased_controls_are_rejected(name, rows, k, options, tmp_path):
    synth(SynthSpec(rows=rows, verifier=name, k=k, rows_per_group=2000, **options), tmp_path)
    report = report_of(tmp_path)
    (record,) = report["verifiers"]
    assert not report["passed"] and not record["passed"]
    assert record["pit_ratio"]["pvalue"] < report["level_per_test"]


def test_engine_log_round_trip_and_audit(tmp_path):
    parquet = npz_to_parquet(ENGINE_LOG, tmp_path / "engine.parquet", "resispec")
    back = read_logged(parquet_to_npz(parquet, tmp_path / "back.npz"))
    original = read_logged(ENGINE_LOG)
    assert np.array_equal(back.p, original.p) and np.array_equal(back.token_ids, original.token_ids)
    assert all(np.array_equal(back.decisions[key], original.decisions[key]) for key in original.decisions)
    assert all(np.array_equal(back.ids[key], original.ids[key]) for key in original.ids)
    report = report_of(parquet)
    assert report["passed"] and report["rows"] == 193
    assert [(g["k"], g["nodes"]) for g in report["verifiers"][0]["groups"]] == [(1, 10), (2, 69), (4, 114)]
    with pytest.raises(ValueError, match="verifier: unknown 'nope'"):
        npz_to_parquet(ENGINE_LOG, tmp_path / "x.parquet", "nope")


def test_from_top_logprobs_keeps_the_targets_top_ids():
    columns = from_top_logprobs(np.array([[5, 2]]), np.log([[0.5, 0.3]]), np.array([[2, 9]]), np.log([[0.6, 0.1]]))
    assert columns["token_ids"].tolist() == [[5, 2]]
    assert np.allclose(columns["p"], [[0.5, 0.3]]) and np.allclose(columns["q"], [[0.0, 0.6]])
    assert np.allclose(columns["p_tail"], [0.2]) and np.allclose(columns["q_tail"], [0.4])
    with pytest.raises(ValueError, match="target_logprobs"):
        from_top_logprobs(np.array([[5]]), np.array([[0.5]]), np.array([[2]]), np.array([[-1.0]]))


def test_cli_synth_audit_and_bad_input(tmp_path, capsys):
    out = tmp_path / "set"
    assert main(["log", "synth", "--rows", "300", "--verifier", "resispec_paper", "--kept", "8", "--family",
                 "llm:sigma=1,V=32", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["audit-log", str(out), "--workers", "1", "--json"]) == 1  # the published rule is rejected
    report = json.loads(capsys.readouterr().out)
    assert not report["passed"] and report["verifiers"][0]["verifier"] == "resispec_paper"
    assert main(["audit-log", str(out), "--workers", "1"]) == 1
    assert "FAIL" in capsys.readouterr().out
    write_bad_shard(out)
    assert main(["audit-log", str(out), "--workers", "1", "--skip-bad"]) == 2  # a shard beside a synth run
    assert "a mixed or incomplete set: bad.parquet is not part of run" in capsys.readouterr().err
    (out / "_manifest.json").unlink()  # a folder of shards of one's own
    assert main(["audit-log", str(out), "--workers", "1"]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("resispec audit-log: ") and "bad.parquet row group 1: row 24" in error
    assert main(["audit-log", str(out), "--workers", "1", "--skip-bad", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["skipped"][0]["where"].endswith("bad.parquet row group 1")
    assert main(["audit-log", str(tmp_path / "missing")]) == 2
    assert "neither a file nor a directory" in capsys.readouterr().err
    assert main(["log", "synth", "--rows", "0", "--verifier", "rrs", "--out", str(tmp_path / "y")]) == 2
    assert main(["log", "convert", str(ENGINE_LOG), str(tmp_path / "z.parquet")]) == 2
    assert "--verifier" in capsys.readouterr().err


def test_step_stats_take_one_stream_per_pair():
    from resispec.sim.kernels import step_stats
    from resispec.sim.sources import parse_source

    batch = parse_source("llm:V=12").sample(5, np.random.default_rng(0))
    spawned = step_stats("resispec_paper", batch, 3, np.random.default_rng(7))
    listed = step_stats("resispec_paper", batch, 3, np.random.default_rng(7).spawn(5))
    assert np.array_equal(spawned.accepted, listed.accepted) and not spawned.exact
    with pytest.raises(ValueError, match="one Generator per pair"):
        step_stats("resispec_paper", batch, 3, np.random.default_rng(7).spawn(4))
