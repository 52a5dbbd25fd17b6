"""llama.cpp as the peer of ``resispec bench engine`` (`resispec.engine.bench.llama_peer`): one line and no peer rows
without ``llama_cpp``; with it, a seeded untruncated sampler on the target's GGUF and a tokens/s row."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from resispec.cli import main
from resispec.engine.bench import bench_engine
from resispec.engine.bench.bench_engine import EngineRow
from resispec.engine.bench.llama_peer import LLAMA, LLAMA_LOOKUP, UNTRUNCATED, make_llama_peers
from resispec.engine.decode.processing import Sampling
from resispec.engine.model import models
from resispec.engine.model.tiny import tiny_llama
from tests.engine.model.test_models import requires_target_wheel

requires_llama_cpp = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                                        reason="llama-cpp-python not installed (the extra 'peer')")


def test_without_llama_cpp_the_peer_is_skipped_with_a_reason(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # `import llama_cpp` now raises ImportError
    peers, why = make_llama_peers(tmp_path / "model.gguf", 1, ["plain", "lookup"])
    assert peers == {} and "llama_cpp" in why and "resispec[peer]" in why and "\n" not in why
    assert make_llama_peers(tmp_path / "model.gguf", 1, []) == ({}, None)  # not asked for: nothing to say


def test_bench_engine_says_once_that_it_skipped_llama_cpp_and_goes_on(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    monkeypatch.setattr(models, "load_target", lambda **kwargs: (tiny_llama(seed=0), None))
    monkeypatch.setattr(bench_engine, "bench_engine", lambda *args, **kwargs: [
        EngineRow("ar", tokens=4, target_forwards=4, seconds=1.0, target_seconds=0.5, speedup=1.0)])
    assert main(["bench", "engine", "--verifier", "ar", "--assistant-tokens", "--prompts", "1", "--json",
                 "--target-compute", "float32"]) == 0  # the tiny stand-in has no GGUF blocks
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and "skipped the llama.cpp peer" in lines[0] and "llama_cpp" in lines[0]
    assert '"llama_cpp_skipped": "llama_cpp does not import' in captured.out


@pytest.mark.real_model
@requires_target_wheel
@requires_llama_cpp
def test_llama_cpp_samples_untruncated_seeded_and_gets_a_tokens_per_second_row(real_target):
    from resispec.engine.model.gguf import target_gguf_path

    model, tokenizer = real_target
    peers, why = make_llama_peers(target_gguf_path(), 1, ["plain"])
    assert why is None and list(peers) == [LLAMA]
    peer = peers[LLAMA]
    seen = []
    generate = peer.llm.generate
    peer.llm.generate = lambda tokens, **options: seen.append(options) or generate(tokens, **options)
    prompt = tokenizer("Hello", return_tensors="pt").input_ids[0].tolist()
    first, split = peer.generate(prompt, 4, 1.0, seed=7, eos_id=tokenizer.eos_token_id)
    again, _ = peer.generate(prompt, 4, 1.0, seed=7, eos_id=tokenizer.eos_token_id)
    assert first == again and 1 <= len(first) <= 4 and split["target_forwards"] >= len(first)
    assert seen[0] == {"temp": 1.0, **UNTRUNCATED}
    assert (seen[0]["top_k"], seen[0]["top_p"], seen[0]["min_p"], seen[0]["typical_p"],
            seen[0]["repeat_penalty"]) == (0, 1.0, 0.0, 1.0, 1.0)
    rows = bench_engine.bench_engine({"float32": model}, tokenizer, ["ar"], "default", (1,), 3,
                                     Sampling(1.0), 0, ["Say hi."], llama_peers=peers)
    row = next(row for row in rows if row.name == LLAMA)
    assert row.tokens >= 1 and row.tokens_per_second > 0 and row.speedup is not None
    assert LLAMA_LOOKUP not in {row.name for row in rows}

