"""Choosing the tree: the branching vector that maximises expected tokens per second.

A tree with ``b_d`` children per node at depth d (d = 1..D) is verified from the root down. With
``A(k)``, the probability that a node with k candidates accepts one of them (the verifier's exact
acceptance, measured on real positions), the walk reaches depth d with probability
``R_d = kappa_d prod_{j <= d} A(b_j)``, and a round emits

    E(b) = 1 + sum_{d=1}^{D} R_d        tokens          (the accepted path, then one token from p).

``kappa_d`` corrects for consecutive positions not being independent (easy and hard stretches of text):
with a_t the one-candidate acceptance at position t of real text and abar its mean,
``kappa_d = mean_t prod_{i<d} a_{t+i} / abar^d`` (1 without the measurement), so a chain's R_d is the
measured probability of surviving d consecutive positions; on this model's text it is below abar^d.

It costs ``T(b) = sum_{d=0}^{D-1} c(w_d) + t(n) + sum_{d=1}^{D} u(b_d) + v``: the draft feeds
``w_d = prod_{j <= d} b_j`` rows at level d (leaves are never fed), the target scores all
``n = 1 + sum_{d=1}^{D} w_d`` nodes in one forward, the walk verifies at most one node per level, with
``u(k)`` the measured seconds of one node's verification with k candidates (a plan-building verifier pays
much more for k >= 2 than for one candidate), and ``v`` is what a real round adds beyond those (measured by the
calibration: cold caches, processing, drawing, bookkeeping). ``t`` and ``c`` are measured cost
curves (`resispec.engine.decode.calibration`). As in Sequoia (arXiv 2402.12374), the objective is tokens per second,
``E(b) / T(b)``; the shapes searched are all branching vectors with ``b_d <= max_children``, at most
``max_nodes`` nodes and ``max_depth`` levels, chains included. The value of a shape is a sum over levels
of products of per-level factors, so the search runs depth-first over prefixes, carrying (R_d, w_d, n,
cost so far), and scores every prefix as a tree of its own: ``O(#shapes)``, a few thousand at the
defaults, exact within that family. With ``plain``, the empty shape competes too: plain decoding, one
token per target forward of one row, ``E = 1`` and ``T = t(1) + v_plain`` (``v_plain``: the sampling and
bookkeeping of a plain token; ``v`` where not given), so the choice can be not to speculate where no tree pays. Row
sharing of equal i.i.d. siblings (`resispec.engine.decode.expand`) only lowers the real cost, so the estimate is
conservative for i.i.d. drafting.
"""

from __future__ import annotations

import math
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


def expected_tokens(branching: Sequence[int], acceptance: Sequence[float],
                    correlation: Sequence[float] | None = None) -> float:
    """``E(b) = 1 + sum_d kappa_d prod_{j <= d} A(b_j)``, with ``acceptance[k - 1] = A(k)`` and
    ``correlation[d - 1] = kappa_d`` (all 1 when None)."""
    total, reach = 1.0, 1.0
    for depth, children in enumerate(branching):
        reach *= acceptance[children - 1]
        total += reach * (correlation[depth] if correlation is not None else 1.0)
    return total


def survival_correlation(acceptance_runs: Sequence[Sequence[float]], max_depth: int = MAX_DEPTH) -> list[float]:
    """``kappa_1..kappa_D`` (module docstring) from runs of one-candidate acceptances at consecutive
    positions (one run per text): the mean over every window of d positions inside a run of the product
    of its acceptances, over the d-th power of the mean acceptance. A depth no run is long enough for
    keeps the last measured value."""
    values = [a for run in acceptance_runs for a in run]
    if not values or any(not 0.0 <= a <= 1.0 for a in values):
        raise ValueError(f"acceptance_runs: expected values in [0, 1], got {list(acceptance_runs)}")
    mean = sum(values) / len(values)
    kappas: list[float] = []
    for depth in range(1, max_depth + 1):
        windows = [run[t:t + depth] for run in acceptance_runs for t in range(len(run) - depth + 1)]
        if not windows or mean == 0.0:
            kappas.append(kappas[-1] if kappas else 1.0)
            continue
        survival = sum(math.prod(window) for window in windows) / len(windows)
        kappas.append(survival / mean ** depth)
    return kappas


def best_tree(acceptance: Sequence[float], target_cost: Callable[[int], float], draft_cost: Callable[[int], float],
              round_cost: float = 0.0, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH,
              max_children: int = MAX_CHILDREN, correlation: Sequence[float] | None = None,
              verify_cost: Callable[[int], float] | None = None, plain: bool = False,
              plain_cost: float | None = None) -> TreeChoice:
    """The branching vector maximising ``E(b) / T(b)`` (module docstring); ``()`` (plain decoding) among them
    with ``plain``.

    Args:
        acceptance: ``A(1), ..., A(K)``, each in [0, 1]; ``max_children`` is capped at K.
        target_cost: seconds of one target forward over n nodes (n >= 2; n = 1 with ``plain``).
        draft_cost: seconds of one draft forward over w rows.
        round_cost: seconds per round besides the forwards (verification, bookkeeping).
        correlation: ``kappa_1, ..., kappa_D`` (`survival_correlation`), at least ``max_depth`` values;
            None: independent positions.
        verify_cost: ``u(k)``, seconds of one node's verification with k candidates; None: 0.
        plain: whether plain decoding (``branching = ()``) competes.
        plain_cost: seconds per plain token besides its forward (``v_plain``); None: ``round_cost``.
    """
    if not acceptance or any(not 0.0 <= a <= 1.0 for a in acceptance):
        raise ValueError(f"acceptance: expected values in [0, 1], got {list(acceptance)}")
    if correlation is not None and (len(correlation) < max_depth or any(not k >= 0.0 for k in correlation)):
        raise ValueError(f"correlation: expected {max_depth} non-negative values, got {list(correlation)}")
    max_children = min(max_children, len(acceptance))
    best: TreeChoice | None = None

    def visit(prefix: tuple[int, ...], reach: float, tokens: float, width: int, nodes: int, draft_seconds: float):
        nonlocal best
        if prefix or plain:  # the empty prefix: plain decoding, one row through the target, no draft
            overhead = round_cost if prefix or plain_cost is None else plain_cost
            seconds = draft_seconds + target_cost(nodes) + overhead
            choice = TreeChoice(prefix, tokens, seconds)
            if best is None or choice.tokens_per_second > best.tokens_per_second:
                best = choice
        if len(prefix) == max_depth:
            return
        level_seconds = None  # this level fed to the draft: priced only where a child fits
        for children in range(1, max_children + 1):
            next_width = width * children
            if nodes + next_width > max_nodes:
                break
            level_seconds = draft_cost(width) if level_seconds is None else level_seconds
            next_reach = reach * acceptance[children - 1]
            kappa = correlation[len(prefix)] if correlation is not None else 1.0
            verify_seconds = verify_cost(children) if verify_cost is not None else 0.0
            visit(prefix + (children,), next_reach, tokens + kappa * next_reach, next_width, nodes + next_width,
                  draft_seconds + level_seconds + verify_seconds)

    visit((), 1.0, 1.0, 1, 1, 0.0)
    return best
