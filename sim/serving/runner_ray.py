"""The ``ray`` engine: the same per-row-group function as Ray tasks, on a local Ray instance or a
cluster (``address``). Files must be readable at the same path by every worker (a shared or
local filesystem). At most two tasks per CPU are in flight, so the driver holds a bounded number of
results; each task holds one row group."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from resispec.sim.serving.pool import descendants, end_processes
from resispec.sim.serving.runner_local import Progress, plan, unit_stats
from resispec.sim.serving.stats import AuditSettings, ShardStats

INSTALL_HINT = "the ray engine needs Ray: pip install 'resispec[scale]'"


def _ray():
    try:
        import ray
    except ImportError:
        raise ValueError(f"engine: {INSTALL_HINT}") from None
    return ray


def start(address: str | None = None, num_cpus: int | None = None) -> bool:
    """Connect to ``address`` or start a local instance (``num_cpus`` CPUs) unless Ray already runs;
    returns whether this call started it. Workers get this process's ``sys.path``, so they import the
    same ``sim`` as the driver."""
    ray = _ray()
    if ray.is_initialized():
        return False
    folders = (os.path.abspath(entry or ".") for entry in sys.path if Path(entry or ".").is_dir())
    path = os.pathsep.join(dict.fromkeys(folders))
    runtime_env = {"env_vars": {"PYTHONPATH": path}} if address is None else None
    ray.init(address=address, num_cpus=num_cpus if address is None else None, include_dashboard=False,
             log_to_driver=False, runtime_env=runtime_env, logging_level="WARNING")
    return True


def run_ray(path: str | Path, settings: AuditSettings = AuditSettings(), address: str | None = None,
            skip_bad: bool = False, progress: Progress | None = None, num_cpus: int | None = None) -> ShardStats:
    """Merged statistics of every row group under ``path``, one Ray task per row group."""
    ray = _ray()
    found, merged = plan(path, skip_bad)
    starting = not ray.is_initialized()
    try:
        start(address, num_cpus)
        task = ray.remote(unit_stats)
        limit = 2 * max(int(ray.cluster_resources().get("CPU", 1)), 1)
        pending, rows = {}, {}
        queue = list(reversed(found))
        while queue or pending:
            while queue and len(pending) < limit:
                unit = queue.pop()
                ref = task.remote(unit, settings, skip_bad)
                pending[ref], rows[ref] = unit, unit.rows
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                try:
                    merged.merge(ray.get(ref))
                except ray.exceptions.RayTaskError as error:  # re-raise a bad row group's own error
                    raise error.cause if isinstance(error.cause, ValueError) else error from None
                del pending[ref]
                if progress:
                    progress(rows.pop(ref))
    finally:
        if starting:  # the instance this run started ends with it, every process of it (Ctrl-C included)
            processes = descendants(os.getpid(), "ray")
            ray.shutdown()
            end_processes(processes)
    return merged
