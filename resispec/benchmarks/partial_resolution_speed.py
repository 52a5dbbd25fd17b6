"""Per-row cost of partial_resolution against pooled's plan, at equal acceptance (both reach alpha*).

A row's cost is what a decode pays at one position: ``bind(p, q, k)`` (validation and plan) plus one
``verify`` of a fresh i.i.d. tuple on that plan. Both verifiers run on the same rows, tuples and uniforms,
timed alternately row by row (pooled first on even rows, partial_resolution first on odd ones), so background
load falls on both alike; the medians over rows are reported with their ratio, and the largest gap between
the two closed-form acceptances on the same rows.

Rows at the SmolLM2 vocabulary (V = 49,152) come from the shared logged pairs (``full_vocabulary_rows``):
each row's 2048 kept ids at their logged probabilities, its tail mass spread evenly over the other ids.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from resispec.formats.pairs import LoggedPairs
from resispec.verifiers.partial_resolution import PartialResolution
from resispec.verifiers.pooled import Pooled

DEFAULT_KS = (2, 3, 4, 5, 6, 7, 8)


@dataclass(frozen=True)
class RowCost:
    """Medians over ``rows`` rows at one k (milliseconds for builds and rows, microseconds per tuple)."""

    k: int
    rows: int
    pooled_build_ms: float
    partial_build_ms: float
    pooled_tuple_us: float
    partial_tuple_us: float
    pooled_row_ms: float
    partial_row_ms: float
    speedup: float
    max_acceptance_gap: float

    def to_dict(self) -> dict:
        return asdict(self)


def full_vocabulary_rows(pairs: LoggedPairs, draft: str = "q", count: int | None = None) -> list[tuple]:
    """``(p, q)`` rows over the whole vocabulary (``pairs.vocab_size``) from a sparse log: the kept ids at
    their logged values, each tail spread evenly over the ids not kept, renormalised."""
    if not pairs.sparse:
        raise ValueError("pairs: expected a sparse log (token_ids and tails)")
    q_values, q_tail = pairs.drafts[draft]
    rows = []
    for b in range(len(pairs) if count is None else min(count, len(pairs))):
        full = []
        for values, tail in ((pairs.p[b], pairs.p_tail[b]), (q_values[b], q_tail[b])):
            row = np.full(pairs.vocab_size, tail / (pairs.vocab_size - values.size))
            row[pairs.token_ids[b]] = values
            full.append(row / row.sum())
        rows.append(tuple(full))
    return rows


def _timed(call: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    out = call()
    return time.perf_counter() - start, out


def bench_rows(rows: Sequence[tuple], ks: Iterable[int] = DEFAULT_KS, seed: int = 0,
               progress: Callable[[str], None] | None = None) -> list[RowCost]:
    """Median per-row cost of pooled and partial_resolution per k over ``rows`` ((p, q) pairs)."""
    rng = np.random.default_rng(seed)
    verifiers = (Pooled(), PartialResolution())
    results = []
    for k in ks:
        builds, tuples, gaps = [[], []], [[], []], []
        for index, (p, q) in enumerate(rows):
            candidates = rng.choice(p.size, size=k, p=q)
            u = rng.random(verifiers[0].uniforms_needed(k))
            bound = [None, None]
            for which in ((0, 1) if index % 2 == 0 else (1, 0)):
                seconds, bound[which] = _timed(lambda: verifiers[which].bind(p, q, k))
                builds[which].append(seconds)
                tuples[which].append(_timed(lambda: bound[which].verify(candidates, u))[0])
            gaps.append(abs(bound[0].acceptance() - bound[1].acceptance()))
        build = [float(np.median(b)) for b in builds]
        one = [float(np.median(t)) for t in tuples]
        row = [float(np.median(np.add(b, t))) for b, t in zip(builds, tuples)]
        results.append(RowCost(k, len(rows), build[0] * 1e3, build[1] * 1e3, one[0] * 1e6, one[1] * 1e6,
                               row[0] * 1e3, row[1] * 1e3, row[0] / row[1], float(max(gaps))))
        if progress:
            progress(f"k={k}: pooled {row[0] * 1e3:.1f} ms/row, partial_resolution {row[1] * 1e3:.1f} ms/row")
    return results
