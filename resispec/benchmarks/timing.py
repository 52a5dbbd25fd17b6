"""Interleaved timing: a workload and its reference are timed alternately, medians compared."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def median_ratio(workload: Callable[[], object], reference: Callable[[], object],
                 repeats: int) -> tuple[float, float, float]:
    """``(median workload s, median reference s, ratio)``, timing the two alternately ``repeats`` times.

    Alternating spreads background load evenly over both, so the ratio is steadier than either time.
    """
    workload_times, reference_times = [], []
    workload()
    reference()
    for _ in range(repeats):
        start = time.perf_counter()
        reference()
        reference_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        workload()
        workload_times.append(time.perf_counter() - start)
    work, ref = float(np.median(workload_times)), float(np.median(reference_times))
    return work, ref, work / ref
