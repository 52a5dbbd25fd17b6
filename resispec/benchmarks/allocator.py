"""Steady allocator for benchmarks: no page faults from the C allocator returning memory to the OS.

With glibc's defaults a freed block of a few hundred KB goes back to the operating system and the
next array of that size page-faults in again, which can triple the time of a softmax over 49k
tokens and makes ratios swing from run to run. Raising the mmap and trim thresholds (as a
long-running server effectively sees) keeps such blocks in the heap. Process-wide and permanent:
call it only from a benchmark's own process.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
THRESHOLD_BYTES = 64 * 1024 * 1024


def steady_allocator() -> bool:
    """Raise glibc's trim and mmap thresholds; False where that is not possible (not glibc)."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, THRESHOLD_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD, 2 * THRESHOLD_BYTES))
