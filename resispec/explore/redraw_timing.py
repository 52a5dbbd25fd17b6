"""How long an edit takes to redraw in ``resispec explore``: the model alone, and the whole server-side
redraw (model, figures' data sources and the table's HTML), medians over repeats, on Dirichlet(1) pairs
with every registered verifier selected, each run cold (as after an edit of p, q or k). The browser's own
rendering is not included."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

DEFAULT_VOCABS = (3, 8, 16)
DEFAULT_KS = (1, 2, 3, 4)


@dataclass(frozen=True)
class RedrawTiming:
    vocab: int
    k: int
    model_ms: float
    redraw_ms: float
    redraw_cpu_ms: float
    enumerated: int
    verifiers: int

    def to_dict(self) -> dict:
        return asdict(self)


def _median_ms(work: Callable[[], object], repeats: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """Median time of ``work`` in ms by ``clock`` (wall by default; ``time.process_time`` for this process's
    CPU time, which other jobs on the machine do not inflate), each run cold (the model's remembered
    numbers dropped first)."""
    from resispec.explore.model import forget

    times = []
    for _ in range(repeats):
        forget()
        start = clock()
        work()
        times.append(clock() - start)
    return 1e3 * float(np.median(times))


def bench_redraw(vocabs: list[int], ks: list[int], repeats: int, seed: int,
                 progress: Callable[[str], None] | None = None) -> list[RedrawTiming]:
    """One ``RedrawTiming`` per (V, k)."""
    from resispec.explore import model, presets
    from resispec.explore.view import Explorer

    page = Explorer()
    results = []
    for vocab in vocabs:
        page.p_values, page.q_values, page.labels = presets.dirichlet(1.0, vocab, seed)
        for k in ks:
            page.k.value = k  # redraws once (warm-up)
            state = page.state()
            shown = model.display(state)
            result = RedrawTiming(vocab, k, _median_ms(lambda: model.display(state), repeats),
                                  _median_ms(page.redraw, repeats), _median_ms(page.redraw, repeats, time.process_time),
                                  sum(entry.law is not None for entry in shown.verifiers), len(shown.verifiers))
            results.append(result)
            if progress:
                progress(f"V={vocab} k={k}: redraw {result.redraw_ms:.1f} ms, {result.redraw_cpu_ms:.1f} ms CPU "
                         f"(model {result.model_ms:.1f} ms)")
    return results
