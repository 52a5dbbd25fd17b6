"""``resispec bench engine``: speculative decoding vs autoregressive sampling on a fixed prompt set.

For each prompt (``engine/data/bench_prompts.json``) every configuration runs in turn, so background
load spreads evenly over them; per configuration the emitted tokens, target forwards and wall time
are summed over the prompts. Speedup = tokens/s of a verifier / tokens/s of ``ar`` in this run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from engine.decoding import AUTOREGRESSIVE
from engine.generation import GenerationRequest, generate
from engine.processing import Sampling

PROMPTS_FILE = Path(__file__).parent / "data" / "bench_prompts.json"


@dataclass
class EngineRow:
    verifier: str
    tokens: int = 0
    target_forwards: int = 0
    seconds: float = 0.0
    speedup: float = float("nan")

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds else float("nan")

    @property
    def accepted_per_forward(self) -> float:
        return self.tokens / self.target_forwards if self.target_forwards else float("nan")

    def to_dict(self) -> dict:
        return {**asdict(self), "tokens_per_second": self.tokens_per_second,
                "accepted_per_forward": self.accepted_per_forward}


def load_prompts(path: Path = PROMPTS_FILE) -> list[str]:
    return json.loads(path.read_text())


def bench_engine(model, tokenizer, verifiers: Sequence[str], draft: str, branching: tuple[int, ...],
                 max_new_tokens: int, sampling: Sampling, seed: int, prompts: Sequence[str],
                 progress: Callable[[str], None] | None = None) -> list[EngineRow]:
    """One row per configuration (``ar`` first), summed over ``prompts``."""
    names = [AUTOREGRESSIVE, *[v for v in verifiers if v != AUTOREGRESSIVE]]
    rows = {name: EngineRow(name) for name in names}
    for index, prompt in enumerate(prompts):
        for name in names:
            request = GenerationRequest(prompt=prompt, verifier=name, draft=draft, branching=branching,
                                        sampling=sampling, max_new_tokens=max_new_tokens, seed=seed + index)
            tokens, stats = generate(model, tokenizer, request)
            row = rows[name]
            row.tokens += len(tokens)
            row.target_forwards += stats.target_forwards
            row.seconds += stats.seconds
            if progress:
                progress(f"prompt {index + 1}/{len(prompts)} {name}: {stats.tokens_per_second:.2f} tokens/s, "
                         f"{stats.accepted_per_forward:.2f} tokens/forward")
    baseline = rows[AUTOREGRESSIVE].tokens_per_second
    for row in rows.values():
        row.speedup = row.tokens_per_second / baseline
    return list(rows.values())
