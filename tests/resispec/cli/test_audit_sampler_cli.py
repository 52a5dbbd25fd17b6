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
    assert main(["audit-sampler", f"{samplers}/samplers.py:exact", "--samples", "300", "--rule", "rrs"]) == 0
    assert "verdict: PASS" in capsys.readouterr().out
    assert main(["audit-sampler", f"{samplers}/samplers.py:paper_chain", "--level", "chain", "--gamma", "2",
                 "--samples", "600"]) == 1
    assert "verdict: REJECTED" in capsys.readouterr().out


def test_json_is_strict_and_carries_the_verdict(samplers, capsys):
    status = main(["audit-sampler", f"{samplers}/samplers.py:exact", "--samples", "200", "--probe-edges", "--json"])
    record = json.loads(capsys.readouterr().out, parse_constant=lambda name: pytest.fail(f"bare {name}"))
    assert status == 0 and record["verdict"] == "PASS" and len(record["edges"]) == 4
    assert all(test["detectable_tv"] is None or test["detectable_tv"] > 0 for test in record["tests"])


@pytest.mark.parametrize("target, extra, message", [
    ("samplers.py:raising", [], "raised RuntimeError: broken on purpose"),
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
    ("samplers.py:exact", ["--rule", "rrs_wor"], "drafts by wor"),
])
def test_usage_errors_exit_2_with_one_line(samplers, capsys, target, extra, message, monkeypatch):
    monkeypatch.chdir(samplers)
    status = main(["audit-sampler", target, *extra])
    err = capsys.readouterr().err
    assert status == 2 and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_an_audit_that_saw_nothing_exits_2(samplers, capsys, monkeypatch):
    import resispec.audit.sampler as api

    real = api.audit_sampler
    monkeypatch.setattr(api, "audit_sampler", lambda fn, level, **options: real(
        fn, level, **{**options, "samples": 1, "pairs": ["one-hot-p"]}))
    status = main(["audit-sampler", f"{samplers}/samplers.py:exact"])
    captured = capsys.readouterr()
    assert status == 2 and "verdict: NOT TESTED" in captured.out
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


@pytest.mark.parametrize("options, message", [
    (["--min-tokens", "3"], "min_tokens: needs the eos id"),
    (["--frequency-penalty", "0.5"], "declare the 'history' extra"),
    (["--logit-bias", "2"], "expected ID:BIAS"),
])
def test_bad_processing_claims_exit_2_with_one_line(samplers, capsys, options, message):
    assert main(["audit-sampler", f"{samplers}/samplers.py:exact", "--samples", "20", *options]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
