"""Choosing the tree: the branching vector that maximises expected tokens per second.

A tree with ``b_d`` children per node at depth d (d = 1..D) is verified from the root down. With
``A(k)``, the probability that a node with k candidates accepts one of them (the verifier's exact
acceptance, measured on real positions), the walk reaches depth d with probability
``R_d = prod_{j <= d} A(b_j)``, and a round emits

    E(b) = 1 + sum_{d=1}^{D} R_d        tokens          (the accepted path, then one token from p).

It costs ``T(b) = sum_{d=0}^{D-1} c(w_d) + t(n) + v``: the draft feeds ``w_d = prod_{j <= d} b_j`` rows
at level d (leaves are never fed), the target scores all ``n = 1 + sum_{d=1}^{D} w_d`` nodes in one
forward, and ``v`` is the per-round verification and bookkeeping. ``t`` and ``c`` are measured cost
curves (`engine.calibration`). As in Sequoia (arXiv 2402.12374), the objective is tokens per second,
``E(b) / T(b)``; the shapes searched are all branching vectors with ``b_d <= max_children``, at most
``max_nodes`` nodes and ``max_depth`` levels, chains included. The value of a shape is a sum over levels
of products of per-level factors, so the search runs depth-first over prefixes, carrying (R_d, w_d, n,
cost so far), and scores every prefix as a tree of its own: ``O(#shapes)``, a few thousand at the
defaults, exact within that family. Row sharing of equal i.i.d. siblings (`engine.expand`) only lowers
the real cost, so the estimate is conservative for i.i.d. drafting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

MAX_NODES = 32
MAX_DEPTH = 12
MAX_CHILDREN = 4


@dataclass(frozen=True)
class TreeChoice:
    """The chosen shape with its predicted tokens per round, seconds per round and tokens per second."""

    branching: tuple[int, ...]
    tokens_per_round: float
    seconds_per_round: float

    @property
    def tokens_per_second(self) -> float:
        return self.tokens_per_round / self.seconds_per_round


def expected_tokens(branching: Sequence[int], acceptance: Sequence[float]) -> float:
    """``E(b) = 1 + sum_d prod_{j <= d} A(b_j)``, with ``acceptance[k - 1] = A(k)``."""
    total, reach = 1.0, 1.0
    for children in branching:
        reach *= acceptance[children - 1]
        total += reach
    return total


def best_tree(acceptance: Sequence[float], target_cost: Callable[[int], float], draft_cost: Callable[[int], float],
              round_cost: float = 0.0, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH,
              max_children: int = MAX_CHILDREN) -> TreeChoice:
    """The branching vector maximising ``E(b) / T(b)`` (module docstring).

    Args:
        acceptance: ``A(1), ..., A(K)``, each in [0, 1]; ``max_children`` is capped at K.
        target_cost: seconds of one target forward over n nodes (n >= 2).
        draft_cost: seconds of one draft forward over w rows.
        round_cost: seconds per round besides the forwards (verification, bookkeeping).
    """
    if not acceptance or any(not 0.0 <= a <= 1.0 for a in acceptance):
        raise ValueError(f"acceptance: expected values in [0, 1], got {list(acceptance)}")
    max_children = min(max_children, len(acceptance))
    best: TreeChoice | None = None

    def visit(prefix: tuple[int, ...], reach: float, tokens: float, width: int, nodes: int, draft_seconds: float):
        nonlocal best
        if prefix:
            seconds = draft_seconds + target_cost(nodes) + round_cost
            choice = TreeChoice(prefix, tokens, seconds)
            if best is None or choice.tokens_per_second > best.tokens_per_second:
                best = choice
        if len(prefix) == max_depth:
            return
        level_seconds = draft_cost(width)
        for children in range(1, max_children + 1):
            next_width = width * children
            if nodes + next_width > max_nodes:
                break
            next_reach = reach * acceptance[children - 1]
            visit(prefix + (children,), next_reach, tokens + next_reach, next_width, nodes + next_width,
                  draft_seconds + level_seconds)

    visit((), 1.0, 1.0, 1, 1, 0.0)
    return best
