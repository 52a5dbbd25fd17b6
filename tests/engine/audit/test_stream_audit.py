"""The sequence-level stream audit (``resispec.engine.audit.stream_audit``) on the tiny pair (vocab 8): its mechanics
(teacher forcing, padding, the claimed law, impossible tokens, its own uniforms, inputs). The generators
against the real target, exact ones and lossy controls, are in ``test_audit_stream_real.py``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from resispec.audit import Verdict
from resispec.engine.audit.generators import generate_sequences, parse_generator, read_jsonl
from resispec.engine.audit.stream_audit import GeneratedSequence, audit_sequences, stream_pit
from resispec.engine.decode.processing import Sampling
from resispec.engine.runtime.tree_lm import TreeLM

PROMPTS = [torch.tensor([3]), torch.tensor([1, 5])]
COUNT, NEW_TOKENS = 40, 8  # 320 tokens


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models are overhead-bound: a second thread only adds contention."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def sequences(tiny_models, generator: str, seed: int = 0, sampling: Sampling = Sampling()) -> list[GeneratedSequence]:
    target, draft = tiny_models
    return list(generate_sequences(generator, target, PROMPTS, COUNT, NEW_TOKENS, sampling, seed,
                                   draft=TreeLM(draft), branching=(3, 2)))


def test_exact_samples_pass(tiny_models):
    result = audit_sequences(tiny_models[0], sequences(tiny_models, "hf"))
    assert result.passed and result.n == COUNT * NEW_TOKENS, result


def test_another_models_text_is_rejected(tiny_models):
    """Exact samples of the draft q, audited as if from the target p."""
    target, draft = tiny_models
    from_q = [GeneratedSequence(s.prompt_ids, s.generated_ids) for s in sequences((draft, draft), "hf")]
    assert not audit_sequences(target, from_q).passed


def test_audit_uniforms_are_apart_from_the_engines_own(tiny_models):
    """Same seed for the decoder and the audit: with shared uniforms u_t = F(y-) + v p(y) for the very v
    that sampled y, and this audit rejected at p = 3e-68."""
    assert audit_sequences(tiny_models[0], sequences(tiny_models, "engine:ar", seed=0), seed=0).passed


def test_batching_does_not_change_the_pit_values(tiny_models):
    """Padded batches score every token at its own position: the PIT values agree with one-by-one scoring up to
    float32 rounding of the logits (a float32 product's rounding depends on the row count: MKL picks other
    kernels, and on an AVX2-only CPU the values differ by up to ~5e-7), far below the O(0.1) change a
    misaligned position or mask would make."""
    text = sequences(tiny_models, "hf")
    one_by_one = stream_pit(tiny_models[0], text, max_batch_tokens=1).values
    padded = stream_pit(tiny_models[0], text, max_batch_tokens=10_000).values
    np.testing.assert_allclose(one_by_one, padded, atol=1e-5)


def test_a_token_impossible_under_the_claimed_law_fails_the_audit(tiny_models):
    """Tokens sampled at T = 1 but claimed greedy: every non-argmax token has p = 0."""
    claimed = [GeneratedSequence(s.prompt_ids, s.generated_ids, Sampling(0.0)) for s in sequences(tiny_models, "hf")]
    pit = stream_pit(tiny_models[0], claimed)
    result = audit_sequences(tiny_models[0], claimed)
    assert pit.impossible > 0 and not result.passed and result.pvalue == 0.0
    assert f"{pit.impossible} impossible" in result.note and "greedy" in result.note


def test_processing_is_the_claimed_one(tiny_models):
    """hf at T = 0.4, top-k 3 passes when audited at those settings and is caught when audited at T = 1."""
    text = sequences(tiny_models, "hf", sampling=Sampling(0.4, top_k=3))
    assert stream_pit(tiny_models[0], text).impossible == 0
    assert audit_sequences(tiny_models[0], text).passed
    unclaimed = [GeneratedSequence(s.prompt_ids, s.generated_ids) for s in text]
    assert not audit_sequences(tiny_models[0], unclaimed, Sampling()).passed


def test_jsonl_round_trip(tiny_models, tmp_path):
    text = sequences(tiny_models, "hf")[:5]
    path = tmp_path / "text.jsonl"
    path.write_text("\n".join(json.dumps({"prompt_ids": list(s.prompt_ids), "generated_ids": list(s.generated_ids),
                                          "top_k": 5}) for s in text) + "\n\n")
    read = list(generate_sequences(f"jsonl:{path}", tiny_models[0], [], 0, 0, Sampling(0.5)))
    assert [(s.prompt_ids, s.generated_ids) for s in read] == [(s.prompt_ids, s.generated_ids) for s in text]
    assert {s.sampling for s in read} == {Sampling(0.5, 5)}


@pytest.mark.parametrize("line, message", [
    ("{not json", "line 1"), ('{"prompt_ids": [1]}', "generated_ids"), ('{"prompt_ids": [1], "generated_ids": [1.5]}',
                                                                       "integers"),
    ('{"prompt_ids": [1], "generated_ids": [2], "top_p": 2}', "top_p"),
    ('{"prompt_ids": [1], "generated_ids": [2], "top_k": 2.5}', "top_k: must be an integer"),
    ('{"prompt_ids": [1], "generated_ids": [true]}', "generated_ids must be a list of token ids"),
    ('{"prompt_ids": [false], "generated_ids": [2]}', "prompt_ids must be a list of token ids"),
    ('{"prompt_ids": [1], "generated_ids": [-3]}', "non-negative"),
    ('{"prompt_ids": [], "generated_ids": [2]}', "prompt_ids is empty"),
    ('{"prompt_ids": [1], "generated_ids": [2], "temperature": NaN}', "NaN is not JSON"),
    ('{"prompt_ids": [1], "generated_ids": [2], "temperature": 1e-310}', "temperature"),
    ('{"prompt_ids": [1], "generated_ids": [2], "temperature": true}', "temperature"),
    ('[1, 2]', "expected an object"),
    ('{"prompt_ids": [1], "generated_ids": "2"}', "generated_ids must be a list"),
])
def test_bad_jsonl_is_refused_with_its_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt_ids": [1], "generated_ids": [2]}\n' + line + "\n")
    with pytest.raises(ValueError, match=message) as error:
        read_jsonl(path)
    assert f"{path} line 2" in str(error.value)


def test_non_utf8_jsonl_is_refused_with_the_file_and_line(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"prompt_ids": [1], "generated_ids": [2]}\n{"note": "caf\xe9"}\n')
    with pytest.raises(ValueError, match=f"{path} line 2: not UTF-8"):
        read_jsonl(path)


def test_a_sequence_past_the_context_is_refused_with_its_index(tiny_models):
    target = tiny_models[0]
    context = target.config.max_position_embeddings
    text = [([1], [2]), ([1], [2] * context)]
    with pytest.raises(ValueError, match=f"sequence 1 has {context + 1} positions.*context of {context}"):
        stream_pit(target, text)


def test_two_tokens_are_untested_not_passed(tiny_models):
    result = audit_sequences(tiny_models[0], [([3], [1, 2])])
    assert result.verdict is Verdict.UNTESTED and not result.passed and "untested" in result.note
    assert audit_sequences(tiny_models[0], sequences(tiny_models, "hf")).verdict is Verdict.PASS


@pytest.mark.parametrize("text", ["hf:1", "hf-ensemble", "hf-ensemble:1", "hf-ensemble:x", "engine", "jsonl:", "vllm"])
def test_unknown_generators_are_refused(text):
    with pytest.raises(ValueError, match="generator"):
        parse_generator(text)


@pytest.mark.parametrize("pair, message", [
    (([], [1]), "empty prompt"), (([1], [8]), "outside"), (([-1], [1]), "outside"),
])
def test_bad_sequences_are_refused(tiny_models, pair, message):
    with pytest.raises(ValueError, match=message):
        audit_sequences(tiny_models[0], [pair])


def test_no_generated_tokens_is_refused_and_empty_sequences_are_skipped(tiny_models):
    with pytest.raises(ValueError, match="no generated tokens"):
        audit_sequences(tiny_models[0], [([1], [])])
    assert stream_pit(tiny_models[0], [([1], []), ([2], [3, 4])]).values.size == 2


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-3, 2**40) | st.floats(allow_nan=False)
                           | st.text(max_size=3), lambda inner: st.lists(inner, max_size=3), max_leaves=6)
RECORD_KEYS = ("prompt_ids", "generated_ids", "temperature", "top_k", "top_p")


@settings(max_examples=60)
@given(records=st.lists(st.dictionaries(st.sampled_from(RECORD_KEYS), JSON_VALUES | st.lists(st.integers(0, 9),
                                                                                             max_size=4)),
                        min_size=1, max_size=4),
       junk=st.sampled_from(["", "{", "[1]", "null", "\ufffd"]))
def test_random_jsonl_lines_give_checked_sequences_or_a_named_line(tmp_path_factory, records, junk):
    """Any lines: ``read_jsonl`` returns sequences whose ids are non-negative integers and whose sampling
    is valid, or one ``ValueError`` naming the file and the line."""
    path = tmp_path_factory.mktemp("jsonl") / "random.jsonl"
    path.write_text("\n".join([json.dumps(record) for record in records] + [junk]) + "\n", encoding="utf-8")
    try:
        read = read_jsonl(path)
    except ValueError as error:
        assert f"{path} line " in str(error) and "\n" not in str(error)
        return
    assert junk == "" and len(read) == len(records)
    for sequence in read:
        ids = sequence.prompt_ids + sequence.generated_ids
        assert sequence.prompt_ids and all(type(i) is int and i >= 0 for i in ids)
        assert isinstance(sequence.sampling, Sampling)


def test_the_cli_on_two_tokens_says_untested_and_exits_2(tiny_models, tmp_path, capsys, monkeypatch):
    import resispec.engine.model.models
    from resispec.cli import main

    monkeypatch.setattr(resispec.engine.model.models, "load_target", lambda **options: (tiny_models[0], None))
    path = tmp_path / "two.jsonl"
    path.write_text('{"prompt_ids": [3], "generated_ids": [1, 2]}\n')
    assert main(["audit-stream", f"jsonl:{path}", "--threads", "1"]) == 2
    captured = capsys.readouterr()
    assert "verdict: UNTESTED" in captured.out and "detects no TV" in captured.out and "PASS" not in captured.out
    assert captured.err.strip().splitlines()[-1].startswith("resispec audit-stream: error: ")
    assert "untested" in captured.err


def test_transformers_notice_about_its_own_assistant_call_is_dropped_and_nothing_else():
    """transformers' assisted generation logs a deprecation about how *it* calls the assistant's ``generate``; it
    leaked into ``resispec audit-stream hf-assisted`` (issue 46). Only that line is dropped, only inside the block
    (``Logger.filter``: whether the logger lets a record through to its handlers)."""
    import logging

    from resispec.engine.audit.generators import ASSISTANT_NOTICE, quiet_assistant_notice

    logger = logging.getLogger("transformers.generation.utils")

    def passes(message: str) -> bool:
        return bool(logger.filter(logging.LogRecord(logger.name, logging.WARNING, __file__, 1, message, None, None)))

    notice = ASSISTANT_NOTICE + " arguments=({'max_new_tokens'}) is deprecated and will be removed"
    with quiet_assistant_notice():
        assert not passes(notice) and passes("another warning")
    assert passes(notice)
