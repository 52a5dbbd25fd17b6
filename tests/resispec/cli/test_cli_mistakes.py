"""Every user mistake the CLI can meet ends in one line on stderr and exit status 2, no traceback,
before any model loads or any work is done; every ``--json`` output is strict JSON."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from resispec.cli import main
from resispec.cli.output import strict_json
from resispec.sim.batch import SAMPLE_PATH

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
    "generate ngram of length 0": [*GENERATE, "--draft", "ngram-0"],
    "generate layer-skip without layers": [*GENERATE, "--draft", "layer-skip:"],
    "generate layer-skip of names": [*GENERATE, "--draft", "layer-skip:a,b"],
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
    # issue 31 and issue 29 item 5: every command's options validated, every record checked before loading
    "generate temperature 1e-310": [*GENERATE, "--temperature", "1e-310"],
    "audit-stream jsonl top_k 2.5": ["audit-stream", "jsonl:{tmp}/top_k.jsonl"],
    "audit-stream jsonl boolean id": ["audit-stream", "jsonl:{tmp}/boolean.jsonl"],
    "audit-stream jsonl not UTF-8": ["audit-stream", "jsonl:{tmp}/latin1.jsonl"],
    "audit-stream jsonl NaN": ["audit-stream", "jsonl:{tmp}/nan.jsonl"],
    "audit-stream jsonl past the context": ["audit-stream", "jsonl:{tmp}/long.jsonl"],
    "audit-stream threads 0": ["audit-stream", "hf", "--threads", "0"],
    "audit-stream sequences 0": ["audit-stream", "hf", "--sequences", "0"],
    "audit-stream alpha 1": ["audit-stream", "hf", "--alpha", "1"],
    "audit-stream temperature nan": ["audit-stream", "hf", "--temperature", "nan"],
    "audit-stream unknown device": ["audit-stream", "hf", "--device", "bogus"],
    "audit-stream device absent": ["audit-stream", "hf", "--device", "xpu"],
    "bench engine threads 0": ["bench", "engine", "--threads", "0"],
    "bench engine unknown verifier": ["bench", "engine", "--verifier", "bogus"],
    "bench engine tree-from an explicit tree": ["bench", "engine", "--tree", "2,1", "--tree-from", "rrs"],
    "bench engine tree-from unknown verifier": ["bench", "engine", "--tree-from", "bogus"],
    "bench adaptive unknown scenario": ["bench", "adaptive", "--scenarios", "bogus"],
    "bench adaptive prompts 0": ["bench", "adaptive", "--prompts", "0"],
    "bench layer-skip threads 0": ["bench", "layer-skip", "--threads", "0"],
    "bench headroom goal 0": ["bench", "headroom", "--goal", "0"],
    "bench headroom negative cost": ["bench", "headroom", "--fractions", "0.1", "-0.5"],
    "bench headroom plot in a missing folder": ["bench", "headroom", "--plot", "{tmp}/missing/headroom.png"],
    "bench headroom unknown draft": ["bench", "headroom", "--drafts", "feature", "bogus"],
    "bench zoo-headroom width 0": ["bench", "zoo-headroom", "--widths", "16", "0"],
    "bench zoo-headroom unknown rows": ["bench", "zoo-headroom", "--rows", "bogus"],
    "bench zoo-headroom rows of a missing file": ["bench", "zoo-headroom", "--rows", "logged:{tmp}/missing.npz"],
    "bench zoo-headroom rows of a broken file": ["bench", "zoo-headroom", "--rows", "logged:{tmp}/truncated.npz"],
    "bench zoo-headroom plot in a missing folder": ["bench", "zoo-headroom", "--plot", "{tmp}/missing/zoo.png"],
    "bench draft unknown draft": ["bench", "draft", "--drafts", "trained", "ngram-0"],
    "bench engine device absent": ["bench", "engine", "--device", "xpu"],
    "bench explore vocab past the page": ["bench", "explore", "--vocab", "100"],
    "bench explore repeats x": ["bench", "explore", "--repeats", "x"],
    "bench sim pairs 0": ["bench", "sim", "--pairs", "0"],
    "explore port x": ["explore", "--port", "x"],
    "audit-log workers 0": ["audit-log", "{tmp}", "--workers", "0"],
    "audit-log alpha 2": ["audit-log", "{tmp}", "--alpha", "2"],
    "audit-log negative seed": ["audit-log", "{tmp}", "--seed", "-1"],
    "audit-log address without ray": ["audit-log", "{tmp}/nodes", "--address", "x"],
    "audit-log nodes of another version": ["audit-log", "{tmp}/nodes_v2"],
    "audit-log field of the wrong type": ["audit-log", "{tmp}/nodes_float"],
    "audit-log set without rows": ["audit-log", "{tmp}/nodes_empty", "--workers", "1"],
    "audit-log the same shard twice": ["audit-log", "{tmp}/nodes_twice", "--workers", "1"],
    "audit-log sps with two candidates": ["audit-log", "{tmp}/nodes_sps", "--workers", "1"],
    "audit-log a staging folder": ["audit-log", "{tmp}/nodes_staging", "--workers", "1"],
    "log synth rows 0": ["log", "synth", "--rows", "0", "--verifier", "rrs", "--out", "{tmp}/synth"],
    "log synth k x": ["log", "synth", "--rows", "10", "--verifier", "rrs", "--k", "x", "--out", "{tmp}/synth"],
    "log synth unknown verifier": ["log", "synth", "--rows", "10", "--verifier", "bogus", "--out", "{tmp}/synth"],
    "log synth over a folder of one's own": ["log", "synth", "--rows", "10", "--verifier", "rrs", "--out", "{tmp}"],
    "log synth out is a file": ["log", "synth", "--rows", "10", "--verifier", "rrs", "--out", "{tmp}/file"],
    "log convert an empty set": ["log", "convert", "{tmp}/nodes_empty", "{tmp}/x.npz"],
    "log convert into a missing folder": ["log", "convert", "{tmp}/nodes_empty", "/no/such/dir/x.npz"],
    # issue 42: bounded options name themselves (resispec.limits)
    "audit-sampler samples 10**12": ["audit-sampler", "x.py:f", "--samples", str(10**12)],
    "audit-sampler threads past an int": ["audit-sampler", "x.py:f", "--threads", "2147483648"],
    "audit-sampler time limit 1e300": ["audit-sampler", "x.py:f", "--time-limit", "1e300"],
    "audit samples 10**12": ["audit", "--samples", str(10**12)],
    "generate threads past an int": [*GENERATE, "--threads", "2147483648"],
    "bench adaptive threads past an int": ["bench", "adaptive", "--threads", "2147483648"],
    "bench zoo-headroom threads past an int": ["bench", "zoo-headroom", "--threads", "2147483648"],
    "generate prompt not UTF-8": ["generate", "--prompt", "caf\udce9"],  # argv's byte 0xe9, surrogate-escaped
    "generate prompt past the context": ["generate", "--prompt", "word " * 9000],
    "generate a GPT-2 target": [*GENERATE, "--target", "{tmp}/gpt2"],
    "log convert rows-per-group 0": ["log", "convert", "{tmp}/nodes_empty", "{tmp}/x.npz", "--rows-per-group", "0"],
}


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    """A folder with a plain file ``file`` and broken logged-pairs files."""
    folder = tmp_path_factory.mktemp("mistakes")
    (folder / "file").write_text("")
    (folder / "gpt2").mkdir()
    (folder / "gpt2" / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_layer": 1, "n_head": 2,
                                                            "n_embd": 8, "n_positions": 64}))
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
    _bad_jsonl(folder)
    _bad_nodes(folder)
    return folder


def _bad_jsonl(folder):
    good = '{"prompt_ids": [1, 2], "generated_ids": [3]}\n'
    (folder / "top_k.jsonl").write_text(good + '{"prompt_ids": [1], "generated_ids": [3], "top_k": 2.5}\n')
    (folder / "boolean.jsonl").write_text(good + '{"prompt_ids": [1], "generated_ids": [true]}\n')
    (folder / "latin1.jsonl").write_bytes(good.encode() + b'{"prompt_ids": [1], "generated_ids": [3], "n": "\xe9"}\n')
    (folder / "nan.jsonl").write_text(good + '{"prompt_ids": [1], "generated_ids": [3], "temperature": NaN}\n')
    past_the_context = json.dumps({"prompt_ids": [1] * 8000, "generated_ids": [3] * 200})  # the target has 8192
    (folder / "long.jsonl").write_text(good + past_the_context + "\n")


def _bad_nodes(folder):
    """Folders of broken logged-node sets (resispec-nodes/1)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from resispec.formats.atomic import STAGING_MARKER
    from resispec.formats.node_writer import nodes_table

    def columns(rows, verifier="rrs", k=2):
        return {"node_id": np.arange(rows), "verifier": verifier, "token_ids": np.tile(np.arange(3), (rows, 1)),
                "p": np.full((rows, 3), 0.3), "q": np.full((rows, 3), 0.3), "p_tail": np.full(rows, 0.1),
                "q_tail": np.full(rows, 0.1), "candidates": np.tile(np.arange(k), (rows, 1)),
                "emitted": np.zeros(rows, dtype=int), "accepted_index": np.zeros(rows, dtype=int)}

    table = nodes_table(columns(40), 10)
    for name in ("nodes", "nodes_v2", "nodes_float", "nodes_empty", "nodes_twice", "nodes_sps", "nodes_staging"):
        (folder / name).mkdir()
    pq.write_table(table, folder / "nodes" / "a.parquet")
    metadata = {**table.schema.metadata, b"resispec.format": b"resispec-nodes/2"}
    pq.write_table(table.replace_schema_metadata(metadata), folder / "nodes_v2" / "a.parquet")
    index = table.schema.get_field_index("emitted")
    as_float = table.set_column(index, pa.field("emitted", pa.float64()), table.column("emitted").cast(pa.float64()))
    pq.write_table(as_float, folder / "nodes_float" / "a.parquet")
    pq.write_table(nodes_table(columns(0), 10), folder / "nodes_empty" / "a.parquet")
    pq.write_table(table, folder / "nodes_twice" / "a.parquet")
    pq.write_table(table, folder / "nodes_twice" / "b.parquet")
    sps = columns(40, "sps", 1)
    sps["candidates"] = [np.array([0])] * 39 + [np.array([0, 1])]
    pq.write_table(nodes_table(sps, 10), folder / "nodes_sps" / "a.parquet")
    pq.write_table(table, folder / "nodes_staging" / "a.parquet")
    (folder / "nodes_staging" / STAGING_MARKER).write_text("")


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_each_mistake_exits_2_with_one_line_on_stderr(mistake, bad_files, capsys, monkeypatch):
    import resispec.engine.model.models

    monkeypatch.setattr(resispec.engine.model.models, "load_target", _no_model)  # checked before any model loads
    argv = [part.replace("{tmp}", str(bad_files)) for part in MISTAKES[mistake]]
    status = main(argv)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert status == 2, (mistake, captured.err)
    assert len(lines) == 1 and lines[0].startswith("resispec"), (mistake, captured.err)
    assert "Traceback" not in captured.err and not captured.out


def _no_model(*args, **kwargs):
    raise AssertionError("a model was loaded before the arguments were checked")


def test_theory_takes_no_coq_as_python_m_theory_does(monkeypatch):
    from resispec import theory

    seen = []
    monkeypatch.setattr(theory, "main", lambda argv: seen.append(argv) or 0)
    assert main(["theory", "--no-coq", "--no-docs"]) == 0
    assert seen == [["--no-docs", "--no-coq"]]


def test_a_control_with_nothing_to_catch_is_not_a_pass(capsys):
    status = main(["audit", "--verifier", "rrs_skip_dup", "--k", "1", "--suite", "quick", "--samples", "50"])
    captured = capsys.readouterr()
    assert status == 2
    assert "no bias on any audited pair" in captured.err.strip().splitlines()[-1]
    assert "verdict: UNTESTED" in captured.out and "Traceback" not in captured.err


def test_an_audit_too_small_to_see_anything_is_not_a_pass(capsys):
    """``resispec audit --samples 10``: exit 2, one line saying what it could not test, UNTESTED rows; its
    footer is wrapped to the CLI's width (it was one 547-character line)."""
    from resispec.cli.table import WIDTH

    status = main(["audit", "--verifier", "rrs", "ears", "--k", "2", "--suite", "quick", "--samples", "10"])
    captured = capsys.readouterr()
    (error,) = captured.err.strip().splitlines()[-1:]
    assert status == 2 and error.startswith("resispec audit: error: untested: 1 exact row(s) cannot see a TV")
    assert "verdict: UNTESTED" in captured.out and "PASS" not in captured.out
    footer = captured.out.split("\n\n", 1)[1]
    assert "detectable TV" in captured.out and max(map(len, footer.splitlines())) <= WIDTH


def test_json_output_is_strict():
    text = strict_json({"tv": float("nan"), "rows": [np.float32("inf"), 1.5, np.int64(3)], "ok": np.bool_(True)})

    def refuse(constant):
        raise AssertionError(f"non-standard JSON constant {constant}")

    assert json.loads(text, parse_constant=refuse) == {"tv": None, "rows": [None, 1.5, 3], "ok": True}
