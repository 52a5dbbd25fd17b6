"""Logging (p, q, candidates, emitted) per verified node, in the simulator's logged-pairs format.

Each verified node becomes one sparse row of ``resispec.formats.pairs`` (format ``resispec-pairs/1``): the
``keep`` ids of largest ``p + q`` - always including the node's candidates and the emitted token, so
the decision can be replayed - their probabilities (float32), and the mass of every other token as
``p_tail`` / ``q_tail``. ``chain`` numbers the generations, ``position`` is the index of the emitted
token within its generation (successive verified nodes of a chain are successive tokens; a token
drawn at an accepted leaf is not a verified node and leaves a gap), ``depth`` the node's tree depth.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from resispec.formats.pairs import LoggedPairs, write_logged

DEFAULT_KEEP = 256


def sparse_row(p: np.ndarray, q: np.ndarray, required: np.ndarray,
               keep: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
    """One sparse row: ``(kept ids ascending, p there, q there, p_tail, q_tail)``. The ``keep`` ids are
    the ``required`` ones (at most ``keep``) and then those of largest ``p + q``; a tail is
    ``max(1 - sum(kept), 0)`` (0 for an all-zero ``q``, a leaf's)."""
    score = p + q
    score[required] = np.inf
    kept = np.sort(np.argpartition(-score, keep - 1)[:keep])
    q_tail = max(1.0 - q[kept].sum(), 0.0) if q.any() else 0.0
    return kept, p[kept], q[kept], max(1.0 - p[kept].sum(), 0.0), q_tail


class NodeLog:
    """Collects verified nodes and writes them as one logged-pairs file."""

    def __init__(self, vocab_size: int, keep: int = DEFAULT_KEEP,
                 metadata: dict[str, str | float] | None = None) -> None:
        if not 1 <= keep <= vocab_size:
            raise ValueError(f"keep: must lie in [1, {vocab_size}], got {keep}")
        self.vocab_size, self.keep = vocab_size, keep
        self.metadata = dict(metadata or {})
        self.rows: list[tuple] = []
        self.chain = -1

    def start_chain(self) -> None:
        """Start a new generation: its rows get the next chain number, positions from 0."""
        self.chain += 1

    def discard_from(self, position: int) -> None:
        """Drop the current chain's rows at ``position`` or later (tokens cut off by a length limit)."""
        self.rows = [row for row in self.rows if row[8] != self.chain or row[9] < position]

    def record(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor, token: int, index: int,
               position: int, depth: int) -> None:
        """One verified node: p, q (V,), its candidates (k,), the emitted token and accepted index."""
        ids = candidates.cpu().numpy().astype(np.int64)
        row = sparse_row(p.double().cpu().numpy(), q.double().cpu().numpy(), np.append(ids, token), self.keep)
        self.rows.append((*row, ids, token, index, self.chain, position, depth))

    def write(self, path: str | Path) -> int:
        """Write the collected rows to ``path`` (.npz); returns the number of rows."""
        if not self.rows:
            raise ValueError("log: no verified node was recorded (autoregressive decoding verifies none)")
        width = max(len(row[5]) for row in self.rows)
        columns = list(zip(*self.rows))
        candidates = np.full((len(self.rows), width), -1, dtype=np.int64)
        for row, ids in enumerate(columns[5]):
            candidates[row, : len(ids)] = ids
        logged = LoggedPairs(
            p=np.stack(columns[1]).astype(np.float32), drafts={"q": (np.stack(columns[2]).astype(np.float32),
                                                                     np.array(columns[4]))},
            vocab_size=self.vocab_size, token_ids=np.stack(columns[0]).astype(np.int64), p_tail=np.array(columns[3]),
            ids={"chain": np.array(columns[8], dtype=np.int64), "position": np.array(columns[9], dtype=np.int64),
                 "depth": np.array(columns[10], dtype=np.int64)},
            metadata=self.metadata,
            decisions={"candidates": candidates, "emitted": np.array(columns[6], dtype=np.int64),
                       "accepted_index": np.array(columns[7], dtype=np.int64)},
        )
        write_logged(path, logged)
        return len(self.rows)
