"""Throughput of the simulator's batched kernels: many pairs through a verifier vs one softmax.

Pairs are LLM-like (``resispec.sim.sources.LLMLike``: ``p = softmax(3 z)``, ``q = softmax(3 z + eps)``),
generated in chunks of ``chunk`` rows (not timed). For each chunk and verifier, the kernel
(validation of the rows included) and ``scipy.special.softmax`` over the chunk's target logits are
timed alternately ``repeats`` times (``resispec.benchmarks.timing.median_ratio``); the medians are
summed over chunks, so ``seconds`` is the time for all pairs and ``ratio`` its multiple of one
softmax over the same (pairs, V) array.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from resispec.benchmarks.timing import median_ratio
from resispec.benchmarks.verify_speed import LOGIT_SCALE
from resispec.sim.batch import PairBatch
from resispec.sim.kernels import check_verifiers, step_stats
from resispec.sim.sources import LLMLike

DEFAULT_PAIRS = 10_000
DEFAULT_VOCAB = 32_768
DEFAULT_K = 8
DEFAULT_VERIFIERS = ("rrs", "resispec")
DEFAULT_CHUNK = 500
DEFAULT_REPEATS = 3


@dataclass(frozen=True)
class SimTiming:
    """Seconds for ``pairs`` pairs through one verifier's kernel, and the multiple of one softmax."""

    verifier: str
    pairs: int
    vocab: int
    k: int
    seconds: float
    softmax_seconds: float
    ratio: float

    @property
    def pairs_per_second(self) -> float:
        return self.pairs / self.seconds

    def to_dict(self) -> dict:
        return {**asdict(self), "pairs_per_second": self.pairs_per_second}


def bench_sim(verifiers: Sequence[str] = DEFAULT_VERIFIERS, pairs: int = DEFAULT_PAIRS, vocab: int = DEFAULT_VOCAB,
              k: int = DEFAULT_K, chunk: int = DEFAULT_CHUNK, repeats: int = DEFAULT_REPEATS, seed: int = 0,
              progress: Callable[[str], None] | None = None) -> list[SimTiming]:
    """Summed median times of each verifier's kernel and of the softmax, chunk by chunk."""
    from scipy.special import softmax  # deferred: see the resispec package doc

    verifiers = check_verifiers(list(verifiers))
    family = LLMLike(V=vocab, scale=LOGIT_SCALE, sigma=1.0)
    rng = np.random.default_rng(seed)
    work = dict.fromkeys(verifiers, 0.0)
    reference = dict.fromkeys(verifiers, 0.0)
    for start in range(0, pairs, chunk):
        target, draft = family.logits(min(chunk, pairs - start), rng)
        p, q = softmax(target, axis=1), softmax(draft, axis=1)
        for name in verifiers:
            seconds, softmax_seconds, _ = median_ratio(
                lambda: step_stats(name, PairBatch.from_arrays(p, q), k, rng),
                lambda: softmax(target, axis=1), repeats)
            work[name] += seconds
            reference[name] += softmax_seconds
        if progress:
            progress(f"{start + len(p)} / {pairs} pairs: " + ", ".join(
                f"{name} {work[name] / reference[name]:.2f}x softmax" for name in verifiers))
    return [SimTiming(name, pairs, vocab, k, work[name], reference[name], work[name] / reference[name])
            for name in verifiers]
