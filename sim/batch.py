"""A batch of (target, draft) pairs over one vocabulary: the unit every simulator kernel consumes.

Row n is one position: ``p[n]`` the target distribution, ``q[n]`` the draft (shape (N, V) each).
``chain[n]`` and ``position[n]`` place the row in a sequence: rows of one chain with consecutive
positions are successive positions of one text, which the tree replay walks along.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from resispec.formats.pairs import LoggedPairs
from resispec.validation import as_pair_rows

SAMPLE_PATH = Path(__file__).parent / "data" / "smollm2_sample.npz"
"""A small example log shipped with the package (``resispec-pairs/1``; ``docs/sim.md`` says how it was made)."""


@dataclass(frozen=True)
class PairBatch:
    """N validated pairs: ``p``, ``q`` (float64, shape (N, V), rows sum to 1); ``chain``, ``position``
    (int64, shape (N,)); ``source``, a label for tables and plots."""

    p: np.ndarray
    q: np.ndarray
    chain: np.ndarray
    position: np.ndarray
    source: str

    @classmethod
    def from_arrays(cls, p: np.ndarray, q: np.ndarray, source: str = "pairs",
                    chain: np.ndarray | None = None, position: np.ndarray | None = None) -> PairBatch:
        """Validate rows of ``p`` and ``q``; by default every row is its own chain of length one."""
        p_rows, q_rows = as_pair_rows(p, q)
        size = p_rows.shape[0]
        chain = np.arange(size) if chain is None else _ids(chain, "chain", size)
        position = np.zeros(size, dtype=np.int64) if position is None else _ids(position, "position", size)
        return cls(p_rows, q_rows, chain, position, source)

    @classmethod
    def from_logged(cls, logged: LoggedPairs, draft: str = "q", source: str = "logged",
                    tail: str = "merge") -> PairBatch:
        """The rows of a log as a batch against ``draft``. A sparse row becomes a pair over its M kept
        ids plus its tail: ``tail="merge"`` puts both tails in one bucket (M + 1 tokens), which
        overstates the overlap ``sum min(p, q)`` by at most ``min(p_tail, q_tail)``; ``tail="split"``
        gives each tail its own bucket (M + 2 tokens: ``(p_tail, 0)`` and ``(0, q_tail)``), which
        understates it by at most as much. The true overlap lies between. Rows are renormalised.
        A round log's leaves (no draft there) are left out."""
        if draft not in logged.drafts:
            raise ValueError(f"draft: this log has drafts {', '.join(logged.drafts)}, not {draft!r}")
        p, q = logged.tailed(draft, tail)
        rows = logged.drafted
        chain, position = (None if values is None else values[rows]
                           for values in (logged.ids.get("chain"), logged.ids.get("position")))
        p, q = p[rows], q[rows]
        return cls.from_arrays(p / p.sum(axis=1, keepdims=True), q / q.sum(axis=1, keepdims=True),
                               source, chain, position)

    def __len__(self) -> int:
        return self.p.shape[0]

    @property
    def vocab_size(self) -> int:
        return self.p.shape[1]

    def head(self, count: int) -> PairBatch:
        """The first ``count`` rows (all rows if there are fewer)."""
        return self.rows(slice(0, min(count, len(self))))

    def rows(self, rows: slice | np.ndarray) -> PairBatch:
        """The rows selected by a slice or an index array, in that order."""
        return PairBatch(self.p[rows], self.q[rows], self.chain[rows], self.position[rows], self.source)


def _ids(values: np.ndarray, name: str, size: int) -> np.ndarray:
    array = np.asarray(values)
    if array.shape != (size,) or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(
            f"{name}: expected {size} integer ids (shape ({size},)), got {array.dtype} of shape {array.shape}")
    return array.astype(np.int64)
