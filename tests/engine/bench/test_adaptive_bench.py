"""``resispec bench adaptive``'s pieces (`resispec.engine.bench.adaptive_bench`): the bounded burner, the stale
prior, rates pooled over prompts, the rotated order."""

from __future__ import annotations

import time

import pytest

import resispec.engine.bench.adaptive_bench as adaptive_bench
from resispec.engine.bench.adaptive_bench import Burner, Rate, interleaved, pooled, stale_calibration
from resispec.engine.decode.calibration import Calibration
from resispec.engine.decode.decoding import DecodeStats


def test_the_burner_is_bounded_and_stopped():
    with Burner(seconds=30) as burner:
        process = burner.process
        assert process.poll() is None  # burning
        with pytest.raises(RuntimeError, match="already burning"):  # a second process would outlive the bench
            burner.start()
    assert process.poll() is not None and burner.process is None  # stopped on exit
    short = Burner(seconds=0.2)
    short.start()
    deadline = time.monotonic() + 20
    while short.process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert short.process.poll() == 0  # it stops itself at its bound
    short.stop()


def test_the_stale_prior_makes_plain_dear_and_picks_speculation():
    fresh = Calibration([0.4], {1: 0.016, 2: 0.019, 32: 0.09}, {1: 0.004, 16: 0.02}, 0.006, 100, [1.0] * 12,
                        {1: 0.001}, 0.002, {"date": "d"})
    assert fresh.choose(plain=True).branching == ()
    stale = stale_calibration(fresh)
    assert stale_calibration(fresh, generation=1).made != stale.made  # a prior of its own per generation
    assert stale.target_seconds[1] == pytest.approx(3 * 0.016) and stale.target_seconds[2] == 0.019
    assert stale.plain_round_seconds == pytest.approx(0.006) and stale.made["stale_for_benchmark"] == 3.0
    assert stale.choose(plain=True).branching != ()
    assert fresh.target_seconds[1] == 0.016  # the calibration given is left as it was


def test_runs_rotate_and_rates_pool(monkeypatch):
    calls = []

    def fake_generate(model, tokenizer, request, prior=None):
        calls.append((request, prior))
        stats = DecodeStats(seconds=2.0, prefill_seconds=0.5, token_seconds=[0.5 + 0.375 * i for i in range(1, 5)])
        stats.tree = {"online": True, "shape_tokens": {"plain": 3, "1,1": 1},
                      "shapes": [{"at_token": 0, "branching": [1, 1], "reason": "r"},
                                 {"at_token": 2, "branching": [], "reason": "r"}]}
        return [1, 2, 3, 4], stats

    monkeypatch.setattr(adaptive_bench, "generate", fake_generate)
    seen = []
    requests = {name: (lambda prompt, index, name=name: seen.append(name) or name) for name in ("a", "b", "c")}
    per_prompt = interleaved(None, None, requests, ["x", "y", "z", "w"], priors={"b": lambda index: f"prior {index}"})
    assert seen == ["a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"]
    assert [prior for request, prior in calls if request == "b"] == [f"prior {i}" for i in range(4)]
    total = pooled(per_prompt)
    rate = total["a"]
    assert rate.tokens == 16 and rate.tokens_per_second == pytest.approx(2.0)
    assert rate.decode_tokens_per_second == pytest.approx(16 / 6) and rate.per_prompt == [2.0] * 4
    assert rate.shapes == {"plain": 12, "1,1": 4} and rate.first_plain == [2] * 4
    assert Rate().tokens_per_second is None and rate.late_tokens == 0  # 4 tokens: none past the first 64
    late = Rate()
    late.add(80, 8.0, 0.0, {}, [0.1 * (i + 1) for i in range(80)])
    assert late.late_tokens == 16 and late.late_tokens_per_second == pytest.approx(16 / 1.6)
