"""``audit-log --engine ray``: the same per-row-group statistics as Ray tasks, merged to the same report."""

from __future__ import annotations

import json

import pytest

from resispec.cli import main
from resispec.formats.nodes import SchemaError
from resispec.sim.serving.report import audit_report
from resispec.sim.serving.runner_local import run_local
from resispec.sim.serving.runner_ray import run_ray
from resispec.sim.serving.synth import SynthSpec, synth
from tests.sim.serving.test_serving import write_bad_shard

pytestmark = pytest.mark.xdist_group("ray")  # one Ray instance (tests/conftest.py): its tests on one worker


@pytest.fixture(scope="module")
def mixed_set(tmp_path_factory):
    """Two verifiers at two k in one directory: 4 files, 8 row groups."""
    out = tmp_path_factory.mktemp("mixed")
    synth(SynthSpec(rows=200, verifier="rrs", k=2, kept=8, family="llm:sigma=1,V=32", rows_per_file=100,
                    rows_per_group=50), out / "rrs")
    synth(SynthSpec(rows=200, verifier="pooled", k=3, kept=8, family="llm:sigma=1,V=32", seed=1,
                    rows_per_file=100, rows_per_group=50, first_node_id=200), out / "pooled")
    return out


def test_ray_and_local_give_identical_reports(ray_session, mixed_set, capsys):
    ray_report = audit_report(run_ray(mixed_set))
    assert ray_session.is_initialized()  # the session's instance was reused, not shut down
    assert ray_report == audit_report(run_local(mixed_set, workers=1))
    assert ray_report["passed"] and {r["verifier"] for r in ray_report["verifiers"]} == {"rrs", "pooled"}
    assert main(["audit-log", str(mixed_set), "--engine", "ray", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(ray_report))


def test_ray_names_a_bad_row_group_and_skips_it_when_asked(ray_session, mixed_set, tmp_path):
    bad = write_bad_shard(tmp_path)
    with pytest.raises(SchemaError, match=rf"{bad} row group 1: row 24"):
        run_ray(tmp_path)
    merged = run_ray(tmp_path, skip_bad=True)
    assert merged.rows == 25 and merged.skipped[0][0] == f"{bad} row group 1"
