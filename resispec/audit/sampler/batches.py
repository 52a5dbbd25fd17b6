"""Batch composition as an audit dimension: how the audited rows are split into calls.

Rows of every context are shuffled together, so pairs and contexts share a call; batch sizes cycle through
``BATCH_SIZES`` (one row, small, odd and large batches); rows are assigned a seed or none by the batch's mode,
cycling through *mixed* (about half the rows seeded, at least one of each), *unseeded* and *seeded* when the
sampler declares per-row seeds or generators (only *unseeded* otherwise). Each row keeps its batch position,
batch size and mode, so the verdict can be split by them (``GROUPS``): a bug that appears only when seeded and
unseeded rows share a batch (vLLM's v0 rejection sampler before its fix, vllm-project/vllm#10863) shows in the
rows of mixed batches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

BATCH_SIZES = (1, 3, 16, 64, 256, 61, 7, 128)
MODES = ("mixed", "unseeded", "seeded")


@dataclass
class Batch:
    """Row indices of one call (in call order), the batch's mode and each row's seed (None: unseeded)."""

    rows: np.ndarray
    mode: str
    seeds: list[int | None]
    rounds: np.ndarray | None = None
    """Engine drafting with positions: each row's round of its request (-1 unseeded; ``engine_drafting``)."""


def compose(n_rows: int, seeded: bool, rng: np.random.Generator) -> list[Batch]:
    """The calls that cover ``n_rows`` rows once each (module doc)."""
    order = rng.permutation(n_rows)
    batches, start, index = [], 0, 0
    modes = MODES if seeded else ("unseeded",)
    while start < n_rows:
        size = min(BATCH_SIZES[index % len(BATCH_SIZES)], n_rows - start)
        mode = modes[index % len(modes)]
        if mode == "mixed" and size < 2:
            mode = modes[(index + 1) % len(modes)]
        rows = order[start:start + size]
        if mode == "mixed":
            flags = rng.random(size) < 0.5
            flags[0], flags[-1] = True, False
            flags = rng.permutation(flags)
        else:
            flags = np.full(size, mode == "seeded")
        seeds = [int(rng.integers(0, 2**31)) if flag else None for flag in flags]
        batches.append(Batch(rows=rows, mode=mode, seeds=seeds))
        start += size
        index += 1
    return batches


@dataclass
class RowPlacement:
    """Per row: its batch position, the size of its batch, its batch's mode and whether it was seeded."""

    position: np.ndarray
    size: np.ndarray
    mode: np.ndarray
    seeded: np.ndarray
    round: np.ndarray


def placements(batches: list[Batch], n_rows: int) -> RowPlacement:
    position, size = np.zeros(n_rows, dtype=np.int64), np.zeros(n_rows, dtype=np.int64)
    mode, seeded = np.empty(n_rows, dtype=object), np.zeros(n_rows, dtype=bool)
    round_ = np.full(n_rows, -1, dtype=np.int64)
    for batch in batches:
        position[batch.rows] = np.arange(batch.rows.size)
        size[batch.rows] = batch.rows.size
        mode[batch.rows] = batch.mode
        seeded[batch.rows] = [seed is not None for seed in batch.seeds]
        if batch.rounds is not None:
            round_[batch.rows] = batch.rounds
    return RowPlacement(position, size, mode, seeded, round_)


PLACEMENT_FIELDS = ("position", "size", "mode", "seeded", "round")


def subset(placement: RowPlacement, keep: np.ndarray) -> RowPlacement:
    """The placement of the rows ``keep`` selects."""
    return RowPlacement(*(getattr(placement, name)[keep] for name in PLACEMENT_FIELDS))


def concatenate(parts: list[RowPlacement]) -> RowPlacement:
    """The placements of consecutive row blocks as one."""
    return RowPlacement(*(np.concatenate([getattr(part, name) for part in parts]) for name in PLACEMENT_FIELDS))


POSITION_GROUPS: dict[str, Callable[[RowPlacement], np.ndarray]] = {
    "batch position 0": lambda r: r.position == 0,
    "batch positions 1-15": lambda r: (r.position >= 1) & (r.position < 16),
    "batch positions >= 16": lambda r: r.position >= 16,
}
"""Rows by batch position (with mixed per-row parameters also per combination: ``row_parameters``)."""

GROUPS: dict[str, Callable[[RowPlacement], np.ndarray]] = {
    **POSITION_GROUPS,
    "batches of one row": lambda r: r.size == 1,
}
"""Row groups of every audit (mask of a placement); the seed groups below join when seeds are declared."""

SEED_GROUPS: dict[str, Callable[[RowPlacement], np.ndarray]] = {
    "seeded rows of mixed batches": lambda r: (r.mode == "mixed") & r.seeded,
    "unseeded rows of mixed batches": lambda r: (r.mode == "mixed") & ~r.seeded,
    "rows of all-seeded batches": lambda r: r.mode == "seeded",
    "rows of all-unseeded batches": lambda r: r.mode == "unseeded",
}

REQUEST_GROUPS: dict[str, Callable[[RowPlacement], np.ndarray]] = {
    "first round of a request": lambda r: r.round == 0,
    "later rounds of a request": lambda r: r.round > 0,
}
"""With engine drafting and ``positions``: the seeded rows by their request's round (``engine_drafting``)."""
