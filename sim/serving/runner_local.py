"""The ``local`` engine: the per-row-group statistics over this machine's processes, merged exactly."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import as_completed
from pathlib import Path

from resispec.formats.node_reader import Unit, read_unit, units
from resispec.formats.nodes import SchemaError
from resispec.sim.serving.pool import worker_pool
from resispec.sim.serving.stats import AuditSettings, ShardStats, batch_stats

Progress = Callable[[int], None]


def unit_stats(unit: Unit, settings: AuditSettings, skip_bad: bool = False) -> ShardStats:
    """The statistics of one row group; a row group that does not match the layout raises
    ``SchemaError`` (naming the file and row group), or with ``skip_bad`` is recorded as skipped."""
    try:
        return batch_stats(read_unit(unit), settings)
    except SchemaError as error:
        if not skip_bad:
            raise
        return ShardStats(skipped=[(unit.origin, str(error))])


def plan(path: str | Path, skip_bad: bool) -> tuple[list[Unit], ShardStats]:
    """The row groups to read, and the statistics of the files skipped whole (``SchemaError`` for the
    first bad file without ``skip_bad``)."""
    found, bad = units(path)
    if bad and not skip_bad:
        raise SchemaError(bad[0][1])
    return found, ShardStats(skipped=bad)


def run_local(path: str | Path, settings: AuditSettings = AuditSettings(), workers: int | None = None,
              skip_bad: bool = False, progress: Progress | None = None) -> ShardStats:
    """Merged statistics of every row group under ``path``, over ``workers`` processes (default: the
    CPU count; 1 runs in this process). ``progress(rows)`` after each row group."""
    found, merged = plan(path, skip_bad)
    workers = workers or os.cpu_count() or 1
    if workers == 1:
        for unit in found:
            merged.merge(unit_stats(unit, settings, skip_bad))
            if progress:
                progress(unit.rows)
        return merged
    with worker_pool(workers) as pool:
        futures = {pool.submit(unit_stats, unit, settings, skip_bad): unit for unit in found}
        for future in as_completed(futures):
            merged.merge(future.result())
            if progress:
                progress(futures[future].rows)
    return merged
