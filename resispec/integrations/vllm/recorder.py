"""The token log's writer in a vLLM process: rows buffered in memory, written ``shard_tokens`` at a time as whole
``resispec-pit/1`` shards (``resispec.formats.pit_log``); the rest at exit. A SIGKILLed process loses only its
buffer: every shard on disk is whole."""

from __future__ import annotations

import atexit
import os
import threading
from pathlib import Path

import numpy as np

from resispec.formats.pit_log import COLUMNS, file_metadata, rows_table, write_shard


class Recorder:
    """Buffers rows (``add``) and writes shards into ``folder``; its uniforms come from its own generator,
    seeded by ``(seed, pid)`` so that each process of one engine draws its own stream."""

    def __init__(self, folder: Path, seed: int, shard_tokens: int, engine: str, model: str = "") -> None:
        self.folder, self.shard_tokens = Path(folder), shard_tokens
        self.metadata = file_metadata(engine=engine, **({"model": model} if model else {}))
        self.rng = np.random.default_rng([seed, os.getpid()])
        self.columns: dict[str, list] = {name: [] for name in COLUMNS}
        self.shards = 0
        self.step = 0
        self.lock = threading.Lock()
        atexit.register(self.flush)

    def uniforms(self, count: int) -> np.ndarray:
        """``count`` float64 uniforms in [0, 1) for the PITs of one step."""
        return self.rng.random(count)

    def add(self, rows: dict[str, list]) -> None:
        """Append one step's rows (a list per column of ``COLUMNS``); writes a shard when the buffer is full."""
        with self.lock:
            for name in COLUMNS:
                self.columns[name].extend(rows[name])
            self.step += 1
            if len(self.columns["pit"]) >= self.shard_tokens:
                self._write()

    def flush(self) -> None:
        """Write what is buffered as one shard (nothing if empty)."""
        with self.lock:
            self._write()

    def _write(self) -> None:
        if not self.columns["pit"]:
            return
        write_shard(rows_table(self.columns, self.metadata), self.folder, self.shards)
        self.shards += 1
        self.columns = {name: [] for name in COLUMNS}
