"""Every user mistake the CLI can meet ends in one line on stderr and exit status 2, no traceback,
before any model loads or any work is done; every ``--json`` output is strict JSON."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from resispec.cli import main
from resispec.cli.output import strict_json
from sim.batch import SAMPLE_PATH

GENERATE = ["generate", "--prompt", "hi"]

MISTAKES = {
    "audit negative seed": ["audit", "--seed", "-1"],
    "audit k past the limit": ["audit", "--verifier", "pooled", "--k", "1000000"],
    "audit k nothing serves": ["audit", "--verifier", "rrs_wor", "--k", "10", "--suite", "quick"],
    "audit unknown verifier": ["audit", "--verifier", "bogus"],
    "audit zero samples": ["audit", "--samples", "0"],
    "generate negative temperature": [*GENERATE, "--temperature", "-1"],
    "generate nan temperature": [*GENERATE, "--temperature", "nan"],
    "generate top-p above 1": [*GENERATE, "--top-p", "2"],
    "generate top-p 0": [*GENERATE, "--top-p", "0"],
    "generate top-k 0": [*GENERATE, "--top-k", "0"],
    "generate threads 0": [*GENERATE, "--threads", "0"],
    "generate unknown verifier": [*GENERATE, "--verifier", "bogus"],
    "generate unknown draft": [*GENERATE, "--draft", "bogus"],
    "generate no new tokens": [*GENERATE, "--max-new-tokens", "0"],
    "generate negative seed": [*GENERATE, "--seed", "-1"],
    "generate parity above 1": [*GENERATE, "--parity", "2"],
    "generate log-keep 0": [*GENERATE, "--log-keep", "0"],
    "generate unknown device": [*GENERATE, "--device", "bogus"],
    "generate sps on a wide tree": [*GENERATE, "--verifier", "sps", "--tree", "4,2"],
    "generate tree past the limit": [*GENERATE, "--tree", "100,100,100"],
    "generate bad tree": [*GENERATE, "--tree", "4,x"],
    "generate empty raw prompt": ["generate", "--raw", "--prompt", ""],
    "generate log in a missing folder": [*GENERATE, "--log", "/no/such/dir/x.npz"],
    "generate log for autoregressive": [*GENERATE, "--verifier", "ar", "--log", "{tmp}/x.npz"],
    "generate log is a folder": [*GENERATE, "--log", "{tmp}"],
    "generate native in bfloat16": [*GENERATE, "--target-compute", "native", "--dtype", "bfloat16"],
    "generate native from a folder": [*GENERATE, "--target-compute", "native", "--target", "{tmp}"],
    "generate unknown target compute": [*GENERATE, "--target-compute", "int2"],
    "audit-stream native from a folder": ["audit-stream", "hf", "--target-compute", "native", "--target", "{tmp}"],
    "bench engine native on cuda": ["bench", "engine", "--target-compute", "float32", "native", "--device", "cuda"],
    "bench verify unknown verifier": ["bench", "verify", "--verifier", "bogus"],
    "bench verify vocab 0": ["bench", "verify", "--vocab", "0"],
    "bench verify k 0": ["bench", "verify", "--k", "0"],
    "bench verify repeats 0": ["bench", "verify", "--repeats", "0", "--json"],
    "bench pooled unknown option": ["bench", "pooled", "--verifier", "bogus"],
    "bench pooled vocab 0": ["bench", "pooled", "--vocab", "0"],
    "bench pooled k 0": ["bench", "pooled", "--k", "0"],
    "bench torch-verify unknown verifier": ["bench", "torch-verify", "--verifier", "bogus"],
    "bench torch-verify batch 0": ["bench", "torch-verify", "--batch", "0"],
    "bench torch-verify vocab 0": ["bench", "torch-verify", "--vocab", "0"],
    "theory docs under a file": ["theory", "--docs", "{tmp}/file/theory.md"],
    "sim out is a file": ["sim", "drift", "--out", "{tmp}/file"],
    "sim repeated parameter": ["sim", "drift", "--source", "dirichlet:alpha=1,alpha=2", "--out", "{tmp}/out"],
    "sim truncated log": ["sim", "drift", "--source", "logged:{tmp}/truncated.npz", "--out", "{tmp}/out"],
    "sim empty log": ["sim", "drift", "--source", "logged:{tmp}/empty.npz", "--out", "{tmp}/out"],
    "sim renamed npy": ["sim", "drift", "--source", "logged:{tmp}/renamed.npz", "--out", "{tmp}/out"],
    "sim random bytes": ["sim", "drift", "--source", "logged:{tmp}/random.npz", "--out", "{tmp}/out"],
    "sim candidates (N, 0)": ["sim", "drift", "--source", "logged:{tmp}/no_candidates.npz", "--out", "{tmp}/out"],
    "sim header declares 745 GiB": ["sim", "drift", "--source", "logged:{tmp}/bomb.npz", "--out", "{tmp}/out"],
    "sim missing log": ["sim", "drift", "--source", "logged:{tmp}/missing.npz", "--out", "{tmp}/out"],
}


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    """A folder with a plain file ``file`` and broken logged-pairs files."""
    folder = tmp_path_factory.mktemp("mistakes")
    (folder / "file").write_text("")
    sample = SAMPLE_PATH.read_bytes()
    (folder / "truncated.npz").write_bytes(sample[: len(sample) // 2])
    (folder / "empty.npz").write_bytes(b"")
    np.save(folder / "array.npy", np.zeros(3))
    (folder / "array.npy").rename(folder / "renamed.npz")
    (folder / "random.npz").write_bytes(np.random.default_rng(0).bytes(4096))
    with np.load(SAMPLE_PATH) as archive:
        fields = {key: archive[key] for key in archive.files}
    rows = fields["p"].shape[0]
    fields.update(candidates=np.zeros((rows, 0), dtype=np.int64), emitted=fields["token_ids"][:, 0],
                  accepted_index=np.full(rows, -1))
    np.savez(folder / "no_candidates.npz", **fields)
    header = {"descr": "<f8", "fortran_order": False, "shape": (100_000, 1_000_000)}
    with zipfile.ZipFile(folder / "bomb.npz", "w") as archive, archive.open("p.npy", "w") as member:
        np.lib.format.write_array_header_1_0(member, header)
    return folder


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_each_mistake_exits_2_with_one_line_on_stderr(mistake, bad_files, capsys, monkeypatch):
    import engine.model.models

    monkeypatch.setattr(engine.model.models, "load_target", _no_model)  # checked before any model loads
    argv = [part.replace("{tmp}", str(bad_files)) for part in MISTAKES[mistake]]
    status = main(argv)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert status == 2, (mistake, captured.err)
    assert len(lines) == 1 and lines[0].startswith("resispec"), (mistake, captured.err)
    assert "Traceback" not in captured.err and not captured.out


def _no_model(*args, **kwargs):
    raise AssertionError("a model was loaded before the arguments were checked")


def test_a_control_with_nothing_to_catch_is_not_a_pass(capsys):
    status = main(["audit", "--verifier", "rrs_skip_dup", "--k", "1", "--suite", "quick", "--samples", "50"])
    captured = capsys.readouterr()
    assert status == 2
    assert "could not test" in captured.err.strip().splitlines()[-1]
    assert "verdict: UNTESTED CONTROL" in captured.out and "Traceback" not in captured.err


def test_json_output_is_strict():
    text = strict_json({"tv": float("nan"), "rows": [np.float32("inf"), 1.5, np.int64(3)], "ok": np.bool_(True)})

    def refuse(constant):
        raise AssertionError(f"non-standard JSON constant {constant}")

    assert json.loads(text, parse_constant=refuse) == {"tv": None, "rows": [None, 1.5, 3], "ok": True}
