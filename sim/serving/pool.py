"""A process pool that Ctrl-C ends at once, leaving no process behind.

The workers ignore SIGINT (the terminal sends it to the whole process group: without this every worker
would print its own ``KeyboardInterrupt`` traceback), so only the parent sees it; on any exception
leaving the block, the parent cancels the queued tasks and terminates the workers before re-raising.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A ``ProcessPoolExecutor`` of ``workers`` processes (see the module doc)."""
    pool = ProcessPoolExecutor(workers, initializer=_ignore_sigint)
    try:
        yield pool
    except BaseException:
        processes = list((pool._processes or {}).values())  # the executor exposes no public handle
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join()
        raise
    pool.shutdown()
