"""The audit of a ``resispec-pit/1`` token log (``resispec audit-log`` on the vLLM plugin's shards): uniform
PITs pass with every group's size and detectable TV named, a biased group or a token of p = 0 rejects, too few
tokens is no verdict (exit 2), and the CLI's JSON is strict."""

from __future__ import annotations

import json

import numpy as np
import pytest

from resispec.audit import pit_audit
from resispec.cli import main
from resispec.formats.pit_log import file_metadata, rows_table, write_shard
from resispec.sim.serving.pit_log import audit_pit_log, batch_class
from tests.resispec.formats.test_pit_log import columns


def write_log(folder, n: int, seed: int = 0, biased_kind: str | None = None, zero_p: bool = False) -> None:
    rng = np.random.default_rng(seed)
    data = columns(n, rng.random(n))
    data["kind"] = [("accepted", "recovered", "bonus", "plain")[i % 4] for i in range(n)]
    data["draft_position"] = [-1 if kind == "plain" else i % 3 for i, kind in enumerate(data["kind"])]
    data["batch_size"] = [1 + i % 9 for i in range(n)]
    if biased_kind is not None:  # the PITs of one kind squeezed into [0, 0.6): a sampler biased there only
        data["pit"] = [0.6 * u if kind == biased_kind else u for u, kind in zip(data["pit"], data["kind"])]
    if zero_p:
        data["p"][3] = 0.0
    half = n // 2
    for index, part in enumerate((slice(0, half), slice(half, n))):
        write_shard(rows_table({name: values[part] for name, values in data.items()}, file_metadata()), folder,
                    index)


def test_uniform_pits_pass_and_every_group_names_its_size_and_detectable_tv(tmp_path):
    write_log(tmp_path, 4000)
    report = audit_pit_log(tmp_path)
    assert report["verdict"] == "PASS" and report["tokens"] == 4000 and report["shards"] == 2
    groups = {test["group"]: test for test in report["tests"]}
    assert {"all tokens", "kind=verified", "draft_position=-1", "batch_size=8-15", "params=T = 1, unseeded"} <= set(
        groups)
    assert "kind=accepted" not in groups and "kind=recovered" not in groups  # chosen by the token itself
    assert groups["kind=verified"]["tokens"] == 2000 and report["kinds"]["accepted"] == 1000
    assert all(0 < test["min_detectable_tv"] < 1 for test in report["tests"])
    assert report["level"] == pytest.approx(report["alpha"] / len(report["tests"]))


def test_one_biased_group_rejects_and_is_the_one_named(tmp_path):
    write_log(tmp_path, 4000, biased_kind="bonus")
    report = audit_pit_log(tmp_path)
    assert report["verdict"] == "FAIL"
    rejected = {test["group"] for test in report["tests"] if test["verdict"] == "FAIL"}
    assert "kind=bonus" in rejected and "kind=plain" not in rejected and "kind=verified" not in rejected


def test_accepted_and_recovered_apart_are_not_uniform_even_when_exact(tmp_path):
    """Why they are tested together: an exact rule's accepted tokens (token = draft) have PITs inside the draft's
    CDF interval. Drafts from q, acceptance min(1, p/q), recovery from the residual, on a 3-token row."""
    rng = np.random.default_rng(3)
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    residual = np.maximum(p - q, 0) / np.maximum(p - q, 0).sum()
    data = columns(6000)
    for i in range(6000):
        draft = rng.choice(3, p=q)
        accepted = rng.random() < min(1.0, p[draft] / q[draft])
        token = draft if accepted else rng.choice(3, p=residual)
        data["kind"][i], data["draft_position"][i] = ("accepted" if accepted else "recovered"), 0
        data["token"][i], data["p"][i] = int(token), float(p[token])
        data["pit"][i] = float(p[:token].sum() + rng.random() * p[token])
    write_shard(rows_table(data, file_metadata()), tmp_path, 0)
    report = audit_pit_log(tmp_path)
    assert report["verdict"] == "PASS"
    accepted = np.array(data["kind"]) == "accepted"
    assert not pit_audit(np.array(data["pit"])[accepted]).passed  # the subset chosen by the token itself


def test_a_token_of_p_zero_rejects_even_with_uniform_pits(tmp_path):
    write_log(tmp_path, 4000, zero_p=True)
    report = audit_pit_log(tmp_path)
    assert report["zero_p"] == 1 and report["verdict"] == "FAIL"


def test_batch_classes():
    assert [batch_class(size) for size in (1, 2, 3, 4, 7, 8, 100)] == ["1", "2-3", "2-3", "4-7", "4-7", "8-15",
                                                                     "64-127"]


def test_cli_exit_statuses_and_strict_json(tmp_path, capsys):
    write_log(tmp_path / "good", 4000)
    write_log(tmp_path / "bad", 4000, biased_kind="bonus")
    write_log(tmp_path / "tiny", 6)
    assert main(["audit-log", str(tmp_path / "good")]) == 0
    assert "min detectable TV" in capsys.readouterr().out
    assert main(["audit-log", str(tmp_path / "bad"), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "FAIL" and report["format"] == "resispec-pit/1"
    assert main(["audit-log", str(tmp_path / "tiny")]) == 2
    assert "no verdict" in capsys.readouterr().err
    assert main(["audit-log", str(tmp_path / "good"), "--engine", "ray"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
