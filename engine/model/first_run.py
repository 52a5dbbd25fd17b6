"""What the first run on a machine builds, and about how long it takes there.

The first load of the built-in target (no cached dequantized checkpoint in the cache folder,
`resispec.engine.model.gguf.cache_root`) builds, once: the dequantized checkpoint, the native target's layers,
the native forward's row kernels, the draft's tensors where it has any, and the ``--tree auto`` calibration.
Measured on a cold cache (2026-12-07, Intel Xeon with AVX-512 and AMX, 2 cores shared, load average 5.4-8.8):
4 min 54 s wall for an 8-token ``generate`` with the defaults, of which ``FIRST_RUN_CPU_SECONDS`` of CPU. The
estimate for this machine scales that CPU time by how many runnable processes share each core now (the
1-minute load average over the cores, at least 1): on a quiet 2-core machine about 1.5 min, at load 8 about 6.
"""

from __future__ import annotations

import os
from pathlib import Path

from resispec.engine.model.gguf import cache_root, checkpoint_dir, checkpoint_problem, target_gguf_path
from resispec.progress import duration

FIRST_RUN_CPU_SECONDS = 88.0
"""CPU seconds (user + system) of the measured cold run above."""

BUILDS = ("the dequantized checkpoint", "the native target's layers", "the native forward's row kernels",
          "the draft's tensors where it has any", "the --tree auto calibration of this configuration")


def first_run(gguf_path: Path | None = None) -> bool:
    """Whether loading the built-in target would build its cache (no usable dequantized checkpoint yet)."""
    path = gguf_path or target_gguf_path()
    folder = checkpoint_dir(path)
    return not folder.is_dir() or checkpoint_problem(path, folder) is not None


def estimate_seconds(load: float | None = None, cores: int | None = None) -> float:
    """``FIRST_RUN_CPU_SECONDS`` times ``max(1, load / cores)`` (defaults: ``os.getloadavg()[0]`` and the
    cores this process may use)."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    load = os.getloadavg()[0] if load is None else load
    return FIRST_RUN_CPU_SECONDS * max(1.0, load / max(cores, 1))


def first_run_notice(load: float | None = None, cores: int | None = None) -> str:
    """The line the first ``generate`` prints before it starts (module doc)."""
    return (f"resispec: first run on this machine: building, once, {', '.join(BUILDS)}, in {cache_root()}; "
            f"about {duration(estimate_seconds(load, cores))} here at the load now (1.5 min on a quiet 2-core "
            "machine); later runs start in seconds")

