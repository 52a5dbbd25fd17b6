"""``resispec bench adaptive``: the defaults (``--tree auto``, decided as they decode) against plain ``ar`` while the
machine changes under them (issue engine-adaptive's targets), interleaved in one run.

Scenarios, each over the held-out prompts (``engine/data/bench_prompts.json``) at the request's sampling, one
generation per configuration and prompt, the configurations' order rotated by one per prompt:

- ``load``: ``ar`` and the defaults; after half of the prompts a bounded CPU burner (`Burner`: one busy process,
  started and stopped here, killed after ``BURNER_SECONDS`` whatever happens) loads one core until the end. Rates of
  each half apart: the defaults over ``ar`` in the same conditions.
- ``stale``: the defaults started from a calibration whose plain-token costs are multiplied by ``STALE_FACTOR``, doubled
  until it predicts speculation (a
  plain token's forward and what the loop adds to it: what a load spike during the calibration's plain
  measurement leaves), so that it predicts speculation where plain decoding is faster; given as the prior
  (`resispec.engine.decode.generation.generate`'s ``prior``; one prior per generation, so that each starts from it
  afresh), the cache untouched. ``2 STALE_TOKENS`` tokens; rates over the first ``STALE_TOKENS`` and over the rest
  (``late``), against ``ar``'s over the same tokens, and the token at which the decoder first went plain.
- ``repetitive``: a prompt asking to repeat a given paragraph (``REPEAT_PARAGRAPH``), where a copying draft accepts
  well: ``ar``, the defaults and the defaults with the n-gram draft; rates and the shapes used.
- ``warm-start``: wall seconds of a warm ``resispec generate`` of 8 tokens (a new process: imports, cached target
  and calibration), the second of two runs.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from resispec.engine.decode.calibration import Calibration
from resispec.engine.decode.generation import GenerationRequest, generate

BURNER_SECONDS = 900
STALE_FACTOR = 3.0
MAX_STALE_FACTOR = 48.0
"""The factor starts at ``STALE_FACTOR`` and doubles (up to this) until the stale prior predicts speculation."""
STALE_TOKENS = 64
REPEAT_PARAGRAPH = ("The lighthouse keeper climbed the stairs every evening at dusk. He wound the clockwork, trimmed "
                    "the wick and lit the lamp, and then he sat by the window and watched the beam sweep across the "
                    "dark water until the morning came.")
REPEAT_PROMPT = f"Repeat the following paragraph exactly, word for word, three times:\n\n{REPEAT_PARAGRAPH}"


class Burner:
    """One busy process on one core for at most ``seconds`` (it stops itself then), as a context manager."""

    def __init__(self, seconds: float = BURNER_SECONDS) -> None:
        self.seconds = seconds
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        """Start burning; ``RuntimeError`` if this burner already burns (a second start would orphan the first
        process, which then burns on after the benchmark, up to ``seconds``)."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("the burner is already burning")
        code = f"import time\nend = time.monotonic() + {self.seconds}\nwhile time.monotonic() < end:\n    pass\n"
        self.process = subprocess.Popen([sys.executable, "-c", code])

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None

    def __enter__(self) -> Burner:
        self.start()
        return self

    def __exit__(self, *_) -> None:
        self.stop()


@dataclass
class Rate:
    """Tokens and seconds of one configuration over some generations; ``shapes``: tokens per shape (online)."""

    tokens: int = 0
    seconds: float = 0.0
    decode_seconds: float = 0.0
    per_prompt: list[float] = field(default_factory=list)
    shapes: dict[str, int] = field(default_factory=dict)
    first_plain: list[int | None] = field(default_factory=list)
    """Per generation (online): the token at which the decoder first went plain (None: never)."""
    late_tokens: int = 0
    late_seconds: float = 0.0
    """Tokens after the first ``STALE_TOKENS`` of each generation, and their seconds."""

    @property
    def tokens_per_second(self) -> float | None:
        return self.tokens / self.seconds if self.seconds else None

    @property
    def decode_tokens_per_second(self) -> float | None:
        return self.tokens / self.decode_seconds if self.decode_seconds else None

    @property
    def late_tokens_per_second(self) -> float | None:
        return self.late_tokens / self.late_seconds if self.late_seconds else None

    def add(self, tokens: int, seconds: float, prefill: float, tree: dict, token_seconds: Sequence[float] = ()) -> None:
        if len(token_seconds) > STALE_TOKENS:
            self.late_tokens += len(token_seconds) - STALE_TOKENS
            self.late_seconds += token_seconds[-1] - token_seconds[STALE_TOKENS - 1]
        self.tokens += tokens
        self.seconds += seconds
        self.decode_seconds += seconds - prefill
        self.per_prompt.append(tokens / seconds if seconds else float("nan"))
        for shape, count in tree.get("shape_tokens", {}).items():
            self.shapes[shape] = self.shapes.get(shape, 0) + count
        if tree.get("online"):
            self.first_plain.append(next((change["at_token"] for change in tree.get("shapes", [])
                                          if not change["branching"]), None))

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "tokens_per_second": self.tokens_per_second,
                "decode_tokens_per_second": self.decode_tokens_per_second,
                "late_tokens_per_second": self.late_tokens_per_second}


def interleaved(model, tokenizer, requests: dict[str, Callable[[str, int], GenerationRequest]], prompts: Sequence[str],
                priors: dict[str, Callable[[int], Calibration]] | None = None,
                on_prompt: Callable[[int], None] | None = None,
                progress: Callable[[str], None] | None = None) -> list[dict[str, Rate]]:
    """One generation per configuration (``requests[name](prompt, index)``) and prompt, the order rotated by one
    per prompt; ``priors[name](index)``: the prior of that configuration's generation; ``on_prompt(index)`` before each
    prompt's runs. Returns per prompt the rates by configuration."""
    names, per_prompt = list(requests), []
    priors = priors or {}
    for index, prompt in enumerate(prompts):
        if on_prompt is not None:
            on_prompt(index)
        shift = index % len(names)
        rates = {}
        for name in names[shift:] + names[:shift]:
            prior = priors[name](index) if name in priors else None
            tokens, stats = generate(model, tokenizer, requests[name](prompt, index), prior=prior)
            rate = Rate()
            rate.add(len(tokens), stats.seconds, stats.prefill_seconds, stats.tree, stats.token_seconds)
            rates[name] = rate
            if progress is not None:
                progress(f"prompt {index + 1}/{len(prompts)}, {name}: {rate.tokens_per_second:.1f} tokens/s")
        per_prompt.append(rates)
    return per_prompt


def pooled(per_prompt: Sequence[dict[str, Rate]]) -> dict[str, Rate]:
    """The rates of each configuration summed over prompts."""
    total: dict[str, Rate] = {}
    for rates in per_prompt:
        for name, rate in rates.items():
            into = total.setdefault(name, Rate())
            into.tokens += rate.tokens
            into.seconds += rate.seconds
            into.decode_seconds += rate.decode_seconds
            into.per_prompt += rate.per_prompt
            into.first_plain += rate.first_plain
            into.late_tokens += rate.late_tokens
            into.late_seconds += rate.late_seconds
            for shape, count in rate.shapes.items():
                into.shapes[shape] = into.shapes.get(shape, 0) + count
    return total


def stale_calibration(calibration: Calibration, factor: float = STALE_FACTOR, generation: int = 0) -> Calibration:
    """``calibration`` with a plain token's forward ``t(1)`` and what the loop adds to it ``v_plain`` times
    ``factor`` (module docstring), marked so in ``made`` (with ``generation``: a prior of its own per generation,
    so none inherits what another measured)."""
    target = dict(calibration.target_seconds)
    target[1] = target[1] * factor
    return dataclasses.replace(calibration, target_seconds=target,
                               plain_round_seconds=calibration.plain_round_seconds * factor,
                               made={**calibration.made, "stale_for_benchmark": factor, "generation": generation})


def warm_start_seconds(threads: int, runs: int = 2) -> float:
    """Wall seconds of the last of ``runs`` warm ``resispec generate`` runs of 8 tokens, each a new process."""
    command = [sys.executable, "-m", "resispec", "generate", "--prompt", "Name a color.", "--max-new-tokens", "8",
               "--threads", str(threads), "--json"]
    seconds = 0.0
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, env=os.environ.copy())
        seconds = time.perf_counter() - start
    return seconds
