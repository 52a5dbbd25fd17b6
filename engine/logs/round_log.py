"""Logging whole drafted rounds (tree, p at every node, q at the internal nodes) for ``resispec.sim.rounds``.

Each round becomes contiguous rows of the logged-pairs format (``resispec.formats.pairs``, round fields): one row
per node in the tree's numbering, ``parent`` within the round (-1 at the root), ``token`` the node's
drafted token (-1 at the root), the round's number in ``round``. Rows are sparse as
``resispec.engine.logs.node_log`` writes them (``keep`` ids of largest ``p + q``, always including every child's
token, float32, the rest as tails) or, with ``keep=None``, dense float64 rows over the vocabulary. A
leaf was never drafted from: its ``q`` row is zero.

``LoggingRound`` wraps the decoding loop's sequence-level verifier (``resispec.engine.verifiers.round_verification``):
it records each round it is handed, then lets the wrapped verifier decide it, so logging never
changes the decoded text.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from resispec.engine.logs.node_log import DEFAULT_KEEP, sparse_row
from resispec.engine.runtime.tree import CandidateTree
from resispec.engine.verifiers.round_verification import RoundVerification
from resispec.formats.pairs import LoggedPairs, write_logged


class RoundLog:
    """Collects rounds and writes them as one logged-pairs file with round fields."""

    def __init__(self, vocab_size: int, drafting: str, keep: int | None = DEFAULT_KEEP,
                 metadata: dict[str, str | float] | None = None) -> None:
        if keep is not None and not 1 <= keep <= vocab_size:
            raise ValueError(f"keep: must lie in [1, {vocab_size}] (or None for dense rows), got {keep}")
        self.vocab_size, self.keep = vocab_size, keep
        self.metadata = {**(metadata or {}), "drafting": drafting}
        self.rows: list[tuple] = []
        self.rounds = 0

    def record(self, parents: np.ndarray, tokens: np.ndarray, p: np.ndarray, q: np.ndarray) -> None:
        """One round: ``parents`` and ``tokens`` (N,) in the tree's numbering, ``p`` (N, V) at every
        node and ``q`` (I, V) at the internal nodes (float64)."""
        nodes = parents.size
        q_rows = np.zeros_like(p)
        q_rows[: q.shape[0]] = q
        children = [tokens[1:][parents[1:] == node] for node in range(nodes)]
        for node in range(nodes):
            token = -1 if node == 0 else int(tokens[node])
            if self.keep is None:
                row = (None, p[node], q_rows[node], None, None)
            else:
                row = sparse_row(p[node], q_rows[node], np.unique(children[node]), self.keep)
            self.rows.append((*row, self.rounds, int(parents[node]), token))
        self.rounds += 1

    def logged(self) -> LoggedPairs:
        """The recorded rounds in the logged-pairs format."""
        if not self.rows:
            raise ValueError("log: no round was recorded")
        columns = list(zip(*self.rows))
        dense = self.keep is None
        dtype = np.float64 if dense else np.float32
        p, q = np.stack(columns[1]).astype(dtype), np.stack(columns[2]).astype(dtype)
        rounds = {name: np.array(values, dtype=np.int64) for name, values in zip(("round", "parent", "token"),
                                                                              columns[5:8])}
        if dense:
            return LoggedPairs(p=p, drafts={"q": (q, None)}, vocab_size=self.vocab_size, metadata=self.metadata,
                               rounds=rounds)
        return LoggedPairs(p=p, drafts={"q": (q, np.array(columns[4]))}, vocab_size=self.vocab_size,
                           token_ids=np.stack(columns[0]).astype(np.int64), p_tail=np.array(columns[3]),
                           metadata=self.metadata, rounds=rounds)

    def write(self, path: str | Path) -> int:
        """Write the recorded rounds to ``path`` (.npz); returns the number of rounds."""
        write_logged(path, self.logged())
        return self.rounds


class LoggingRound:
    """A sequence-level verifier that logs every round before ``driver`` decides it."""

    def __init__(self, driver: RoundVerification, log: RoundLog) -> None:
        self.driver, self.log = driver, log

    def __call__(self, tree: CandidateTree, tokens: torch.Tensor, p: torch.Tensor, q: torch.Tensor,
                 rng: np.random.Generator) -> tuple[int, int]:
        self.log.record(tree.parents.numpy(), tokens.cpu().numpy(), p.double().cpu().numpy(), q.double().cpu().numpy())
        return self.driver(tree, tokens, p, q, rng)
