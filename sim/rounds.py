"""Replaying logged rounds: every round verifier's exact ``E[accepted draft tokens | tree]`` on the
same logged trees, and their paired differences.

A round log (``resispec.formats.pairs``, round fields) holds whole drafted rounds of a real model: the tree, p at
every node, q at every internal node. For each round and each verifier (``resispec.sequence``:
block, traversal, traversal_wor, traversal_resispec[_wor], gbv, and any zoo verifier node by node), the
exact conditional law given the tree (verification randomness integrated out) gives
``E[accepted | tree] = sum_n P(stop at n | tree) depth(n)``. Every verifier is scored on identical
trees, so differences are paired: mean and standard error ``sd / sqrt(rounds)`` over rounds.

A verifier is scored only on trees drafted by its rule: i.i.d. verifiers on i.i.d. logs, WOR ones on
WOR logs; on chains (one child per node) the two rules coincide and both families apply.

Sparse rows: a round's nodes share one token space, the union of their kept ids plus the tail
bucket(s) of ``LoggedPairs.pairs`` (each node's tail mass sits in its own row's bucket, a token never
drafted). Lumping the tail changes each node's pair only outside its kept ids; see ``docs/sim.md``
for what that does to the measured numbers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from resispec.formats.pairs import LoggedPairs, has_children, root_rows, round_starts
from resispec.formats.stats import standard_error
from resispec.progress import progress as progress_of
from resispec.sequence import get_round_verifier
from resispec.sequence.tree import RoundTree, round_tree

DEFAULT_VERIFIERS = {
    "iid": ("rrs", "resispec", "pooled", "traversal", "traversal_resispec", "gbv"),
    "wor": ("rrs_wor", "resispec_wor", "traversal_wor", "traversal_resispec_wor"),
    "chain": ("sps", "block"),
}
"""What ``score_log`` measures by default per kind of log; the first is the paired baseline."""


@dataclass(frozen=True)
class LoggedRound:
    """One round ready for a round verifier: the tree, p (N, U) and q (I, U) float64 rows."""

    tree: RoundTree
    p: np.ndarray
    q: np.ndarray


def log_kind(pairs: LoggedPairs) -> str:
    """``"chain"`` when every round is a chain, else the log's drafting rule (``"iid"`` / ``"wor"``)."""
    if not pairs.rounds:
        raise ValueError("log: no round fields (round, parent, token); write one with resispec replay --log")
    parents = pairs.rounds["parent"]
    first = root_rows(pairs.rounds["round"])
    child = parents >= 0
    siblings = np.unique(first[child] + parents[child], return_counts=True)[1]
    return "chain" if (siblings <= 1).all() else str(pairs.metadata["drafting"])


def logged_rounds(pairs: LoggedPairs, tail: str = "merge") -> Iterator[LoggedRound]:
    """The log's rounds in order. Dense rows keep the vocabulary; a sparse round's columns are the union
    of its rows' kept ids, then the tail bucket(s). Rows are renormalised (float64)."""
    if not pairs.rounds:
        raise ValueError("log: no round fields (round, parent, token); write one with resispec replay --log")
    p_all, q_all = pairs.tailed("q", tail)
    parents, tokens = pairs.rounds["parent"], pairs.rounds["token"]
    drafted = has_children(pairs.rounds["round"], parents)
    starts = round_starts(pairs.rounds["round"])
    for start, end in zip(starts.tolist(), np.append(starts[1:], len(pairs)).tolist()):
        internal = int(drafted[start:end].sum())
        p, q, local = p_all[start:end], q_all[start:start + internal], tokens[start:end].copy()
        if pairs.sparse:
            ids = pairs.token_ids[start:end]
            union, inverse = np.unique(ids, return_inverse=True)
            buckets = p.shape[1] - ids.shape[1]
            rows = np.arange(end - start)[:, None]
            p = _scatter(p, rows, inverse.reshape(ids.shape), union.size, buckets)
            q = _scatter(q, rows[:internal], inverse.reshape(ids.shape)[:internal], union.size, buckets)
            local[1:] = np.searchsorted(union, local[1:])
        local[0] = 0
        yield LoggedRound(round_tree(parents[start:end], local, p.shape[1]),
                          p / p.sum(axis=1, keepdims=True), q / q.sum(axis=1, keepdims=True))


def _scatter(values: np.ndarray, rows: np.ndarray, columns: np.ndarray, width: int, buckets: int) -> np.ndarray:
    """Rows over ``width`` union columns plus ``buckets`` tail columns."""
    kept = values.shape[1] - buckets
    out = np.zeros((values.shape[0], width + buckets))
    out[rows, columns] = values[:, :kept]
    out[:, width:] = values[:, kept:]
    return out


def check_verifiers(names: Sequence[str], kind: str) -> None:
    """``ValueError`` for a verifier whose drafting rule differs from the log's (chains take both)."""
    if not names:
        raise ValueError("verifiers: name at least one")
    for name in names:
        verifier = get_round_verifier(name)
        if kind != "chain" and verifier.drafting != kind:
            raise ValueError(f"verifiers: {name} verifies {verifier.drafting}-drafted trees; this log's trees are "
                             f"{kind}-drafted")
        if kind != "chain" and getattr(verifier, "chains_only", False):
            raise ValueError(f"verifiers: {name} verifies chains only; this log has trees")


def score_rounds(rounds: Sequence[LoggedRound] | Iterator[LoggedRound], names: Sequence[str],
                 total: int | None = None, progress: bool = True) -> dict[str, np.ndarray]:
    """Per verifier, ``E[accepted draft tokens | tree]`` of every round (exact, from its round law)."""
    verifiers = {name: get_round_verifier(name) for name in names}
    accepted: dict[str, list[float]] = {name: [] for name in names}
    for logged in progress_of(rounds, total=total, desc="rounds", unit="round", disable=None if progress else True):
        for name, verifier in verifiers.items():
            accepted[name].append(verifier.law(logged.tree, logged.p, logged.q).expected_accepted(logged.tree))
    return {name: np.array(values) for name, values in accepted.items()}


@dataclass(frozen=True)
class Summary:
    """A verifier's mean E[accepted] per round and its paired difference to the baseline, with SEs."""

    name: str
    baseline: str
    mean: float
    se: float
    difference: float
    difference_se: float
    rounds: int

    @property
    def resolved(self) -> bool:
        """Whether the paired difference is at least two standard errors away from 0."""
        return abs(self.difference) >= 2 * self.difference_se > 0


def summarise(accepted: dict[str, np.ndarray], baseline: str) -> list[Summary]:
    """Mean and standard error per verifier, and the paired difference against ``baseline``."""
    if baseline not in accepted:
        raise ValueError(f"baseline: {baseline!r} is not among the scored verifiers {', '.join(accepted)}")
    base = accepted[baseline]
    return [Summary(name, baseline, float(values.mean()), standard_error(values), float((values - base).mean()),
                    standard_error(values - base), int(values.size)) for name, values in accepted.items()]


def score_log(pairs: LoggedPairs, names: Sequence[str] | None = None, tail: str = "merge",
              progress: bool = True) -> tuple[str, dict[str, np.ndarray]]:
    """The log's kind and, per verifier of ``names`` (default ``DEFAULT_VERIFIERS[kind]``), every
    round's ``E[accepted | tree]``."""
    kind = log_kind(pairs)
    names = list(names or DEFAULT_VERIFIERS[kind])
    check_verifiers(names, kind)
    total = int(round_starts(pairs.rounds["round"]).size)
    return kind, score_rounds(logged_rounds(pairs, tail), names, total, progress)


def table(kind: str, summaries: Sequence[Summary]) -> str:
    """A text table: per verifier, mean E[accepted] +- SE and the paired difference to the baseline."""
    baseline = summaries[0].baseline
    lines = [f"{kind} rounds: {summaries[0].rounds}; E[accepted draft tokens | tree], mean +- SE over rounds",
             f"{'verifier':<24}{'E[accepted]':>20}{'- ' + baseline + ' (paired)':>28}  2 SE"]
    for s in summaries:
        difference = "" if s.name == baseline else f"{s.difference:+.4f} +- {s.difference_se:.4f}"
        mark = "" if s.name == baseline else ("yes" if s.resolved else "no")
        lines.append(f"{s.name:<24}{s.mean:>11.4f} +- {s.se:.4f}{difference:>28}  {mark}")
    return "\n".join(lines)
