"""A process pool that Ctrl-C ends at once, leaving no process behind.

The workers ignore SIGINT (the terminal sends it to the whole process group: without this every worker
would print its own ``KeyboardInterrupt`` traceback), so only the parent sees it; on any exception
leaving the block, the parent cancels the queued tasks, terminates the workers and waits for the
executor's manager thread to end before re-raising. That last wait matters: on Python 3.11 the
interpreter's exit hook writes to the manager thread's wake-up pipe without the lock the thread closes
it under, so a thread still closing it at exit printed ``OSError: [Errno 9] Bad file descriptor`` after
the command's one ``interrupted`` line (the race CPython fixed in gh-125451, for 3.12 on).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path

PROC = Path("/proc")
MANAGER_GRACE = 10.0  # seconds: the manager thread ends within milliseconds once its workers are gone


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A ``ProcessPoolExecutor`` of ``workers`` processes (see the module doc)."""
    pool = ProcessPoolExecutor(workers, initializer=_ignore_sigint)
    try:
        yield pool
    except BaseException:
        processes = list((pool._processes or {}).values())  # the executor exposes no public handles
        manager = pool._executor_manager_thread  # shutdown(wait=False) drops the reference
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join()
        if manager is not None:
            manager.join(MANAGER_GRACE)
        raise
    pool.shutdown()


def descendants(pid: int, command: str = "") -> list[int]:
    """Every descendant process id of ``pid`` whose command line contains ``command`` (read from /proc;
    empty where there is none)."""
    parents: dict[int, int] = {}
    for entry in PROC.glob("[0-9]*"):
        try:
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, owner in parents.items() if owner == parent]
        found += children
        frontier += children
    return [child for child in found if command in _command(child)]


def _command(pid: int) -> str:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def end_processes(pids: list[int], grace: float = 2.0) -> None:
    """Wait up to ``grace`` seconds for ``pids`` to exit, then kill the ones still running (Ray's node
    agents outlive ``ray.shutdown()`` by more than 30 s)."""
    deadline = time.monotonic() + grace
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [pid for pid in alive if running(pid)]
    for pid in alive:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        return (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
