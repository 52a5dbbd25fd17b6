"""``resispec bench engine`` (`resispec.engine.bench.bench_engine`): warm-up, rotated order, the same computation
flagged and pooled, per-prompt spread, decode-only rates."""

from __future__ import annotations

import pytest
import torch

import resispec.engine.bench.bench_engine as bench
import resispec.engine.decode.generation as generation
from resispec.engine.data.prompts import load_bench_prompts
from resispec.engine.decode.calibration import Calibration
from resispec.engine.decode.processing import Sampling


@pytest.fixture
def one_thread():
    """One torch thread (two oversubscribe a loaded 2-core machine badly), restored after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
@pytest.mark.real_model
def test_bench_rows_are_warmed_rotated_flagged_and_spread(real_target, monkeypatch, one_thread):
    model, tokenizer = real_target
    dear_draft = Calibration([0.3, 0.4], {1: 0.02, 32: 0.1}, {1: 0.02, 16: 0.05}, 0.005, 8, [1.0] * 12,
                             {1: 0.001, 2: 0.001}, 0.002)  # no tree pays: the defaults decode plainly
    monkeypatch.setattr(generation, "choose_tree", lambda *args: (dear_draft.choose(), dear_draft, True))
    monkeypatch.setattr(generation, "_ONLINE", {})  # a fresh online model: 12 plain tokens, no probe (after 16)
    calls = []
    real_generate = bench.generate

    def recording(target, tokenizer_, request):
        calls.append((request.verifier, request.max_new_tokens))
        return real_generate(target, tokenizer_, request)

    monkeypatch.setattr(bench, "generate", recording)
    prompts = load_bench_prompts()[:2]
    rows = bench.bench_engine({"native": model}, tokenizer, ["ar", "resispec"], "default", "auto", 4, Sampling(1.0),
                              0, prompts)
    assert calls[:2] == [("ar", 4), ("resispec", 4)]  # warm-up first: WARM_UP_TOKENS, at most the run's tokens
    timed = [verifier for verifier, _ in calls[2:]]
    assert timed == ["ar", "resispec", "resispec", "ar"]  # rotated by one per prompt
    by_name = {row.name: row for row in rows}
    ar, defaults = by_name["ar"], by_name["resispec"]
    for row in (ar, defaults):
        assert len(row.per_prompt) == 2 and row.spread[0] <= row.tokens_per_second <= row.spread[1]
        assert row.decode_tokens_per_second > row.tokens_per_second  # the prefill left out
    assert defaults.tree == "plain" and defaults.same_as == "ar" and ar.same_as is None
    pooled = bench.pooled_plain(rows, "ar")
    assert pooled.tokens == ar.tokens + defaults.tokens and len(pooled.per_prompt) == 4
    assert bench.pooled_plain([ar], "ar") is None
