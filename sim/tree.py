"""Expected accepted tokens per target forward for a draft tree of a given shape.

Shape ``(b_1, ..., b_D)``: every node at depth d has ``b_d`` drafted children. One target forward
verifies the tree from the root: at depth d the verifier accepts one of the ``b_d`` children with
probability ``alpha_d`` (its acceptance at ``k = b_d`` on that position's pair) and the walk goes on
below it; the first rejection ends the walk. Accepted tokens ``A = sum_d prod_{j<=d} 1{accepted at j}``;
each forward also emits one more token (the residual draw, or the bonus token below a full path),
so tokens per forward are ``A + 1``. The tree holds ``sum_d prod_{j<=d} b_j`` drafted nodes.

- analytic, for a stationary source whose positions are independent: ``E[A] = sum_d prod_{j<=d}
  mean(alpha(b_j))``.
- replay over chains (logged text, or synthetic chains): start at every position that has ``D - 1``
  successors in its chain, and take ``E[A | start s] = sum_d prod_{j<=d} alpha_{s+j-1}(b_j)`` with the
  pairs actually found along the chain (verification randomness integrated out); the estimate is
  the mean over starts. Its 95 % interval treats chains as independent clusters (overlapping starts
  within a chain are correlated); with a single chain the starts are cut into ``BLOCKS`` contiguous
  blocks instead. A replay assumes the accepted token is the logged one, i.e. that the next
  position's pair does not depend on which candidate was accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from resispec.formats.stats import Z95, Estimate
from resispec.sim.batch import PairBatch
from resispec.validation import as_count

BLOCKS = 8
"""Clusters for the interval of a replay over a single chain."""


def parse_shape(text: str) -> tuple[int, ...]:
    """``"4,2,2,1"`` -> ``(4, 2, 2, 1)``; ``ValueError`` naming the shape otherwise."""
    try:
        shape = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"tree shape: expected comma-separated branching factors like 4,2,2,1, got {text!r}") from None
    for branching in shape:
        as_count(branching, "tree shape", "children per node")
    return shape


def tree_nodes(shape: tuple[int, ...]) -> int:
    """Drafted nodes in the tree: ``sum_d prod_{j<=d} b_j``."""
    return int(np.sum(np.cumprod(shape)))


def analytic_tokens(mean_acceptance: dict[int, float], shape: tuple[int, ...]) -> float:
    """``sum_d prod_{j<=d} mean_acceptance[b_j]`` (stationary, independent positions)."""
    return float(np.sum(np.cumprod([mean_acceptance[branching] for branching in shape])))


@dataclass(frozen=True)
class Replay:
    """Replay estimate over chains: ``accepted`` (with its 95 % interval) and how many starts were used."""

    accepted: Estimate
    starts: int


def successors(batch: PairBatch) -> np.ndarray:
    """Row of the next position in the same chain for each row (-1 where there is none)."""
    keys = {(int(c), int(p)): row for row, (c, p) in enumerate(zip(batch.chain, batch.position))}
    return np.array([keys.get((int(c), int(p) + 1), -1) for c, p in zip(batch.chain, batch.position)])


def replay_tokens(acceptance: dict[int, np.ndarray], shape: tuple[int, ...], batch: PairBatch) -> Replay:
    """Mean accepted tokens per forward over every start with a full path (``acceptance[k]`` per row)."""
    following = successors(batch)
    path = [np.arange(len(batch))]
    for _ in shape[1:]:
        previous = path[-1]
        path.append(np.where(previous >= 0, following[np.maximum(previous, 0)], -1))
    valid = path[-1] >= 0
    starts = int(valid.sum())
    if starts == 0:
        nan = float("nan")
        return Replay(Estimate(nan, nan, nan), 0)
    survive = np.ones(starts)
    tokens = np.zeros(starts)
    for rows, branching in zip(path, shape):
        survive = survive * acceptance[branching][rows[valid]]
        tokens += survive
    clusters = batch.chain[valid]
    if np.unique(clusters).size < 2:
        clusters = np.arange(starts) * BLOCKS // starts
    return Replay(_clustered_mean(tokens, clusters), starts)


def _clustered_mean(values: np.ndarray, clusters: np.ndarray) -> Estimate:
    """Mean with a cluster-robust 95 % interval: ``se^2 = C/(C-1) sum_c (T_c - n_c mean)^2 / n^2``."""
    mean = float(values.mean())
    _, cluster = np.unique(clusters, return_inverse=True)
    count = cluster.max() + 1
    deviations = np.bincount(cluster, values - mean)
    se = float(np.sqrt(count / (count - 1) * np.sum(deviations**2)) / values.size) if count > 1 else 0.0
    return Estimate(mean, mean - Z95 * se, mean + Z95 * se)
