"""``resispec audit-sampler FILE.py:FUNCTION``: exit 0 on a pass, 1 on a rejection, 2 with one line on stderr on
every usage error (the file, the function, a sampler that raises, hangs or returns the wrong shape, an audit
that saw nothing); ``--json`` is strict JSON."""

import json
import textwrap
from pathlib import Path

import pytest

from resispec.cli import main

SAMPLERS = textwrap.dedent('''
    import time
    from resispec.audit.sampler import zoo_sampler

    exact = zoo_sampler("rrs")
    paper_chain = zoo_sampler("resispec_paper", "chain")

    def raising(p, q, candidates):
        raise RuntimeError("broken on purpose")

    def wrong_shape(p, q, candidates):
        return candidates

    def floats(p, q, candidates):
        return candidates[:, 0] * 1.0

    def hanging(p, q, candidates):
        time.sleep(30)

    not_callable = 3
''')


@pytest.fixture
def samplers(tmp_path):
    path = tmp_path / "samplers.py"
    path.write_text(SAMPLERS)
    (tmp_path / "broken.py").write_text("import nonexistent_module_xyz\n")
    return tmp_path


def test_a_pass_exits_0_and_a_rejection_exits_1(samplers, capsys):
    assert main(["audit-sampler", f"{samplers}/samplers.py:exact", "--k", "2", "--samples", "300",
                 "--rule", "rrs"]) == 0
    assert "verdict: PASS" in capsys.readouterr().out
    assert main(["audit-sampler", f"{samplers}/samplers.py:paper_chain", "--level", "chain", "--gamma", "2",
                 "--samples", "600"]) == 1
    assert "verdict: FAIL" in capsys.readouterr().out


def test_json_is_strict_and_carries_the_verdict(samplers, capsys):
    status = main(["audit-sampler", f"{samplers}/samplers.py:exact", "--k", "2", "--samples", "200", "--probe-edges",
                   "--json"])
    record = json.loads(capsys.readouterr().out, parse_constant=lambda name: pytest.fail(f"bare {name}"))
    assert status == 0 and record["verdict"] == "PASS" and len(record["edges"]) == 4
    assert all(test["detectable_tv"] is None or test["detectable_tv"] > 0 for test in record["tests"])


@pytest.mark.parametrize("target, extra, message", [
    ("samplers.py:wrong_shape", [], "returned shape"),
    ("samplers.py:floats", [], "returned float64 values"),
    ("samplers.py:hanging", ["--time-limit", "0.3"], "did not return within the time limit"),
    ("samplers.py:not_callable", [], "has no function 'not_callable'"),
    ("samplers.py:missing", [], "has no function 'missing'"),
    ("nowhere.py:f", [], "no file"),
    ("broken.py:f", [], "cannot import"),
    ("samplers.py", [], "expected FILE.py:FUNCTION"),
    ("samplers.py:exact", ["--level", "forest"], "invalid choice"),
    ("samplers.py:exact", ["--k", "0"], "expected a count in [1, 8]"),
    ("samplers.py:exact", ["--branching", "2,x"], "comma-separated integers"),
    ("samplers.py:exact", ["--rule", "rrs_wor", "--k", "2"], "drafts by wor"),
    ("samplers.py:exact", [], "k: the sampler takes 8 candidate counts (1 to 8); say which it is meant for with --k"),
])
def test_usage_errors_exit_2_with_one_line(samplers, capsys, target, extra, message, monkeypatch):
    monkeypatch.chdir(samplers)
    status = main(["audit-sampler", target, *extra])
    err = capsys.readouterr().err
    assert status == 2 and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_sampler_that_raises_shows_its_own_frames_and_the_failing_call(samplers, capsys, monkeypatch):
    monkeypatch.chdir(samplers)
    status = main(["audit-sampler", "samplers.py:raising"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and lines[0].endswith("raised RuntimeError: broken on purpose (call 1, 1 row(s))")
    assert "samplers.py\", line 9, in raising" in lines[1] and 'raise RuntimeError("broken on purpose")' in lines[2]
    assert lines[3] == "  the failing call: fn(float64 (1, 3), float64 (1, 3), int64 (1, 2) (first row [0, 1]))"


def test_k_defaults_to_the_one_count_the_sampler_takes(samplers, capsys):
    (samplers / "three.py").write_text(
        "from resispec.audit.sampler import zoo_sampler\nexact = zoo_sampler('rrs')\n"
        "def three(p, q, candidates):\n    assert candidates.shape[1] == 3\n    return exact(p, q, candidates)\n")
    assert main(["audit-sampler", f"{samplers}/three.py:three", "--samples", "100"]) == 0
    out = capsys.readouterr().out
    assert "node (k = 3)" in out and "verdict: PASS" in out


def test_an_audit_that_saw_nothing_exits_2(samplers, capsys, monkeypatch):
    import resispec.audit.sampler as api

    real = api.audit_sampler
    monkeypatch.setattr(api, "audit_sampler", lambda fn, level, **options: real(
        fn, level, **{**options, "samples": 1, "pairs": ["one-hot-p"]}))
    status = main(["audit-sampler", f"{samplers}/samplers.py:exact", "--k", "2"])
    captured = capsys.readouterr()
    assert status == 2 and "verdict: UNTESTED" in captured.out
    assert "saw nothing" in captured.err and len(captured.err.strip().splitlines()) == 1


TOYS = Path(__file__).resolve().parents[1] / "audit"


def test_engine_drafting_and_per_row_processing_claims_from_the_command_line(capsys):
    assert main(["audit-sampler", f"{TOYS}/engine_samplers.py:engine_chain", "--level", "chain", "--gamma", "2",
                 "--drafting", "engine", "--extras", "seeds", "positions", "--samples", "300", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["verdict"] == "PASS" and "the sampler drafts" in record["contract"]
    assert main(["audit-sampler", f"{TOYS}/toy_samplers.py:processed_chain", "--level", "chain", "--gamma", "2",
                 "--inputs", "logits", "--min-p", "0.1", "--frequency-penalty", "0.4", "--logit-bias", "2:1.0",
                 "--extras", "history", "processing", "--samples", "300"]) == 0
    assert "claim frequency_penalty:" in capsys.readouterr().out


def test_engine_drafting_of_a_tree_from_the_command_line(capsys):
    assert main(["audit-sampler", f"{TOYS}/engine_samplers.py:engine_tree", "--level", "tree", "--branching", "2,1",
                 "--drafting", "engine", "--extras", "seeds", "positions", "--samples", "300", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["verdict"] == "PASS" and "the sampler drafts" in record["contract"]
    assert "root's 2 children (iid), suite" in {test["test"] for test in record["tests"]}
    assert main(["audit-sampler", f"{TOYS}/engine_samplers.py:engine_tree", "--level", "tree", "--drafting",
                 "engine-wor", "--samples", "300"]) == 1  # its siblings are i.i.d.: they repeat
    assert "paths not one tree" in capsys.readouterr().out


@pytest.mark.parametrize("options, message", [
    (["--min-tokens", "3"], "min_tokens: needs the eos id"),
    (["--frequency-penalty", "0.5"], "declare the 'history' extra"),
    (["--logit-bias", "2"], "expected ID:BIAS"),
])
def test_bad_processing_claims_exit_2_with_one_line(samplers, capsys, options, message):
    assert main(["audit-sampler", f"{samplers}/samplers.py:exact", "--samples", "20", *options]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
