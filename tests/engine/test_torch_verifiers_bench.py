"""``resispec bench torch-verify`` runs end to end on a small batch and reports one row per verifier."""

from __future__ import annotations

import json

import torch

from resispec.cli import main
from engine.bench_verifiers import llm_like_batch
from tests.engine.torch_verifier_helpers import one_thread  # noqa: F401 (fixture)


def test_llm_like_batches_are_valid_float32_distributions():
    _, p, q = llm_like_batch(8, 49152, torch.Generator().manual_seed(0), torch.device("cpu"))
    assert p.dtype == q.dtype == torch.float32 and p.shape == (8, 49152)
    for side in (p, q):
        assert (side.double().sum(dim=-1) - 1).abs().max() < 1e-7  # well inside SUM_TOLERANCE


def test_bench_torch_verify_json_and_table(capsys):
    argv = ["bench", "torch-verify", "--batch", "4", "--vocab", "512", "--repeats", "2", "--threads", "1",
            "--verifier", "resispec", "sps"]
    assert main(argv + ["--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [(r["verifier"], r["k"], r["batch"], r["vocab"], r["device"]) for r in records] == [
        ("resispec", 4, 4, 512, "cpu"), ("sps", 1, 4, 512, "cpu")]
    assert all(r["ratio"] > 0 and r["verify_seconds"] > 0 for r in records)
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "x softmax" in table and "resispec" in table and "B = 4 nodes on cpu" in table
