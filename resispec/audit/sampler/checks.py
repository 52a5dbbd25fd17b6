"""The output contract, checked on every row the sampler returns (no statistics: one violation rejects).

- ``id out of range``: an emitted id outside ``[0, V)`` (``-1`` is padding, and only after the tokens);
- ``token with p = 0``: an emitted token (an accepted draft included) that the processed target forbids;
- ``hole before -1``: a ``-1`` followed by a token (chain, tree);
- ``no token emitted``: a row of ``-1`` only (chain, tree);
- ``longer than the chain``: more than ``length + 1`` tokens (chain: per-row length; tree: depth + 1);
- ``emitted draft differs from the drafted token``: a token before the last that is not the drafted token
  at its position (chain), or a prefix that follows no drafted path (tree).

``emitted`` returns each row's emitted tokens (``-1`` padded) where the row is clean, and the index of the path
the tree's accepted prefix follows (the first such path).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

VIOLATIONS = ("id out of range", "token with p = 0", "hole before -1", "no token emitted", "longer than the chain",
              "emitted draft differs from the drafted token")


@dataclass
class ContractLog:
    """Violations counted over every checked row, with the first example of each."""

    rows: int = 0
    counts: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def add(self, kind: str, mask: np.ndarray, describe) -> None:
        hits = np.flatnonzero(mask)
        if hits.size:
            self.counts[kind] += int(hits.size)
            self.examples.setdefault(kind, describe(int(hits[0])))

    @property
    def clean(self) -> bool:
        return not self.counts

    def to_dict(self) -> dict:
        return {"rows": self.rows, "violations": dict(self.counts), "examples": dict(self.examples)}


def check_rows(level: str, out: np.ndarray, p: np.ndarray, tokens: np.ndarray, lengths: np.ndarray,
               log: ContractLog, label: str = "") -> tuple[np.ndarray, np.ndarray]:
    """Check one call's output (``out``: node (B,), chain / tree (B, D + 1)) against the processed target ``p``
    (node (B, V), chain (B, D + 1, V), tree (B, L, D + 1, V)) and the drafted ``tokens``; count violations in
    ``log``. Returns ``(clean (B,) bool, path (B,) int)``: the rows without violations, and for a tree the path
    the accepted prefix follows (0 elsewhere)."""
    vocab = p.shape[-1]
    log.rows += out.shape[0]
    where = f" ({label})" if label else ""
    if level == "node":
        outside = (out < 0) | (out >= vocab)
        log.add("id out of range", outside, lambda b: f"row {b}: id {out[b]}{where}")
        forbidden = ~outside
        forbidden[forbidden] = p[np.flatnonzero(forbidden), out[forbidden]] <= 0
        log.add("token with p = 0", forbidden, lambda b: f"row {b}: token {out[b]} has p = 0{where}")
        return ~(outside | forbidden), np.zeros(out.shape[0], dtype=np.int64)
    valid = out != -1
    count = valid.sum(axis=1)
    holes = (~valid[:, :-1] & valid[:, 1:]).any(axis=1)
    outside = (valid & ((out < 0) | (out >= vocab))).any(axis=1)
    empty = count == 0
    longer = count > lengths + 1
    log.add("hole before -1", holes, lambda b: f"row {b}: {out[b].tolist()}{where}")
    log.add("id out of range", outside, lambda b: f"row {b}: {out[b].tolist()}{where}")
    log.add("no token emitted", empty, lambda b: f"row {b}: {out[b].tolist()}{where}")
    log.add("longer than the chain", longer & ~holes,
            lambda b: f"row {b}: {int(count[b])} tokens after {int(lengths[b])} drafts{where}")
    bad = holes | outside | empty | longer
    path = np.zeros(out.shape[0], dtype=np.int64)
    mismatch = np.zeros(out.shape[0], dtype=bool)
    forbidden = np.zeros(out.shape[0], dtype=bool)
    for b in np.flatnonzero(~bad):
        n = int(count[b]) - 1
        if level == "chain":
            rows_p = p[b]
            mismatch[b] = bool((out[b, :n] != tokens[b, :n]).any())
        else:
            follows = np.flatnonzero((tokens[b, :, :n] == out[b, :n]).all(axis=1))
            mismatch[b] = follows.size == 0
            path[b] = follows[0] if follows.size else 0
            rows_p = p[b, path[b]]
        if not mismatch[b]:
            forbidden[b] = bool((rows_p[np.arange(n + 1), out[b, :n + 1]] <= 0).any())
    log.add("emitted draft differs from the drafted token", mismatch,
            lambda b: f"row {b}: emitted {out[b].tolist()}, drafted {tokens[b].tolist()}{where}")
    log.add("token with p = 0", forbidden, lambda b: f"row {b}: emitted {out[b].tolist()}{where}")
    return ~(bad | mismatch | forbidden), path
