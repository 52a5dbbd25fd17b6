"""Served logprobs in stream audits (``resispec.engine.audit.served_logprobs``): a stream whose served logprobs are
null, constant or disagree with the target ends UNTESTED with the reason, never a PASS; right ones (raw or processed)
leave the verdict to the PIT; the jsonl forms (numbers, OpenAI objects, llama.cpp's completion_probabilities) read."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from resispec.audit import Verdict
from resispec.engine.audit.generators import generate_sequences, read_jsonl
from resispec.engine.audit.served_logprobs import LOGPROB_TOLERANCE
from resispec.engine.audit.stream_audit import audit_sequences
from resispec.engine.decode.processing import Sampling, target_probs

PROMPTS = [torch.tensor([3]), torch.tensor([1, 5])]


@pytest.fixture(scope="module")
def served(tiny_models):
    """Exact samples of the tiny target, each with its raw and its processed logprobs (T = 0.8)."""
    target = tiny_models[0]
    texts = list(generate_sequences("hf", target, PROMPTS, 40, 8, Sampling(0.8), 0))
    rows = []
    for s in texts:
        with torch.no_grad():
            logits = target(input_ids=torch.tensor([s.prompt_ids + s.generated_ids])).logits[0]
        logits = logits[len(s.prompt_ids) - 1:-1].double()
        tokens = torch.tensor(s.generated_ids)[:, None]
        raw = torch.log_softmax(logits, -1).gather(1, tokens)[:, 0].tolist()
        processed = target_probs(logits, Sampling(0.8)).gather(1, tokens)[:, 0].log().tolist()
        rows.append((s, tuple(raw), tuple(processed)))
    return target, rows


def audit(target, rows, logprobs):
    return audit_sequences(target, [replace(s, logprobs=logprobs(raw, processed)) for s, raw, processed in rows],
                           Sampling(0.8))


def test_right_logprobs_raw_or_processed_leave_the_verdict_to_the_pit(served):
    target, rows = served
    assert audit(target, rows, lambda raw, processed: raw).verdict is Verdict.PASS
    assert audit(target, rows, lambda raw, processed: processed).verdict is Verdict.PASS
    numerics = audit(target, rows, lambda raw, processed: tuple(v + 0.4 * LOGPROB_TOLERANCE for v in raw))
    assert numerics.verdict is Verdict.PASS


@pytest.mark.parametrize("wrong, reason", [
    (lambda raw, processed: (0.0,) * len(raw), "constant (0 at all"),
    (lambda raw, processed: (None,) + raw[1:], "null logprob"),
    (lambda raw, processed: raw[:1] + tuple(v - 2 * LOGPROB_TOLERANCE for v in raw[1:]), "disagree with the target"),
])
def test_null_constant_or_disagreeing_logprobs_end_untested_with_the_reason(served, wrong, reason):
    target, rows = served
    result = audit(target, rows, wrong)
    assert result.verdict is Verdict.UNTESTED and reason in result.note


def test_the_jsonl_forms_of_served_logprobs_are_read_and_bad_ones_named(tmp_path):
    lines = [{"prompt_ids": [1], "generated_ids": [2, 3], "logprobs": [-0.5, None]},
             {"prompt_ids": [1], "generated_ids": [2], "logprobs": {"content": [{"token": "a", "logprob": -1.0}]}},
             {"prompt_ids": [1], "generated_ids": [2], "completion_probabilities": [{"logprob": -2.0}]},
             {"prompt_ids": [1], "generated_ids": [2]}]
    path = tmp_path / "served.jsonl"
    path.write_text("\n".join(map(json.dumps, lines)))
    assert [s.logprobs for s in read_jsonl(path)] == [(-0.5, None), (-1.0,), (-2.0,), None]
    path.write_text(json.dumps({"prompt_ids": [1], "generated_ids": [2, 3], "logprobs": [-0.5]}))
    with pytest.raises(ValueError, match="line 1: logprobs must be a list with one entry per generated id"):
        read_jsonl(path)


def test_the_cli_says_not_tested_with_the_reason_and_exits_2(served, tmp_path, capsys, monkeypatch):
    import resispec.engine.model.models
    from resispec.cli import main

    target, rows = served
    monkeypatch.setattr(resispec.engine.model.models, "load_target", lambda **options: (target, None))
    path = tmp_path / "constant.jsonl"
    path.write_text("\n".join(json.dumps({"prompt_ids": list(s.prompt_ids), "generated_ids": list(s.generated_ids),
                                          "logprobs": [0.0] * len(s.generated_ids)}) for s, _, _ in rows))
    assert main(["audit-stream", f"jsonl:{path}", "--temperature", "0.8", "--threads", "1"]) == 2
    captured = capsys.readouterr()
    assert "served logprobs: constant" in captured.out and "UNTESTED" in captured.out
    assert "verdict: UNTESTED" in captured.out and "PASS" not in captured.out
    assert len(captured.err.strip().splitlines()) == 1 and "served logprobs" in captured.err
