"""``resispec bench torch-verify`` runs end to end on a small batch and reports one row per verifier,
with the fields and units it documents."""

from __future__ import annotations

import json
import time

import torch

from resispec.cli import main
from resispec.engine.bench.bench_verifiers import llm_like_batch
from tests.engine.torch_verifier_helpers import one_thread  # noqa: F401 (fixture)
from tests.timing_records import check_timing_records


def test_llm_like_batches_are_valid_float32_distributions():
    _, p, q = llm_like_batch(8, 49152, torch.Generator().manual_seed(0), torch.device("cpu"))
    assert p.dtype == q.dtype == torch.float32 and p.shape == (8, 49152)
    for side in (p, q):
        assert (side.double().sum(dim=-1) - 1).abs().max() < 1e-7  # well inside SUM_TOLERANCE


def test_bench_torch_verify_json_and_table(capsys):
    argv = ["bench", "torch-verify", "--batch", "4", "--vocab", "512", "--repeats", "2", "--threads", "1",
            "--verifier", "resispec", "sps"]
    start = time.perf_counter()
    assert main(argv + ["--json"]) == 0
    wall = time.perf_counter() - start
    check_timing_records(
        json.loads(capsys.readouterr().out),
        fields=["verifier", "vocab", "k", "verify_seconds", "softmax_seconds", "ratio", "device", "batch"],
        configurations=[("resispec", 512, 4), ("sps", 512, 1)], times=["verify_seconds", "softmax_seconds"],
        ratios={"ratio": ("verify_seconds", "softmax_seconds")}, repeats=2, wall_seconds=wall)
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["V", "verifier", "k", "x", "softmax", "verify", "ms", "softmax", "ms"]
    rows = [line.split() for line in lines[2:4]]
    assert [row[:3] for row in rows] == [["512", "resispec", "4"], ["512", "sps", "1"]]
    assert all(float(cell) > 0 for row in rows for cell in row[3:])
    assert lines[4] == "" and "B = 4 nodes on cpu (1 CPU thread(s)" in lines[5]
