"""Speed of ``pooled``: building its plan once per ``(p, q, k)`` and verifying one tuple with it.

Both are reported as ratios to one ``scipy.special.softmax`` over the same length-V logits, timed
alternately in the same run (``median_ratio``). Build = ``Pooled().bind(p, q, k)`` (validation, sort,
cut, ``t``, pools). Tuple = ``bound.verify(candidates, u)`` on the bound plan (candidate and uniform
validation included), fresh i.i.d. candidates and uniforms each call (drawn beforehand, not timed).
Pairs are the LLM-like peaky pairs of ``verify_speed``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from resispec.benchmarks.timing import median_ratio
from resispec.benchmarks.verify_speed import llm_like_pair
from resispec.verifiers.pooled import Pooled

DEFAULT_VOCABS = (49152,)
DEFAULT_KS = (4,)


@dataclass(frozen=True)
class PooledTiming:
    vocab: int
    k: int
    pools: int
    softmax_seconds: float
    build_seconds: float
    build_ratio: float
    tuple_seconds: float
    tuple_ratio: float

    def to_dict(self) -> dict:
        return asdict(self)


def bench_pooled(vocabs: Sequence[int] = DEFAULT_VOCABS, ks: Sequence[int] = DEFAULT_KS, repeats: int = 25,
                 seed: int = 0, progress: Callable[[str], None] | None = None) -> list[PooledTiming]:
    """Median build and per-tuple times of ``pooled`` over the median softmax time, per V and k."""
    from scipy.special import softmax  # deferred: see the resispec package doc

    rng = np.random.default_rng(seed)
    verifier = Pooled()
    results = []
    for vocab in vocabs:
        logits, p, q = llm_like_pair(vocab, rng)
        reference = lambda: softmax(logits)  # noqa: E731
        for k in ks:
            build, softmax_build, build_ratio = median_ratio(lambda: verifier.bind(p, q, k), reference, repeats)
            bound = verifier.bind(p, q, k)
            tuple_repeats = 20 * repeats
            inputs = itertools.cycle([(bound.draft(rng), rng.random(verifier.uniforms_needed(k)))
                                      for _ in range(tuple_repeats + 1)])
            one, softmax_tuple, tuple_ratio = median_ratio(lambda: bound.verify(*next(inputs)), reference,
                                                           tuple_repeats)
            softmax_seconds = float(np.median([softmax_build, softmax_tuple]))
            results.append(PooledTiming(vocab, k, int(bound.plan.pool_count[0]), softmax_seconds,
                                        build, build_ratio, one, tuple_ratio))
            if progress:
                progress(f"V={vocab} k={k}: build {build_ratio:.1f}x softmax, one tuple {tuple_ratio:.3f}x softmax")
    return results
