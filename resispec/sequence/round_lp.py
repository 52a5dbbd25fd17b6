"""The best achievable round: a linear program over the round's joint law (small V only).

Any round verifier is a conditional law ``pi(n, y | tree)`` of its outcome given the drafted tree. With
``x[t, n, y] = P(t) pi(n, y | t) >= 0`` the constraints are linear: ``sum_(n, y) x[t, n, y] = P(t)`` for
each tree t, and exactness, ``sum x[t, n, y] T(s | path(n) y) = T(s)`` for every sequence s of D + 1
tokens (``resispec.audit.round_law``). The optimum of ``max sum x[t, n, y] depth(n)`` is the largest
expected number of accepted draft tokens per round any exact verifier reaches on that tree law; every
verifier of ``resispec.sequence`` is one feasible point. Solved by HiGHS's dual simplex
(``scipy.optimize.linprog``), whose optimum is a vertex; the vertex is then *polished*: clipped at 0, or
else its support's columns solved for again by least squares, so the equalities hold to float64 rounding
(``POLISH_TOLERANCE``) instead of the solver's feasibility tolerance (set to 1e-10), and a verifier sampling the plan
(``resispec.sequence.round_lp_verifier``) is exact to 1e-12.

Size: one column per (tree, node, token), ``trees x N x V``, and ``V^(D+1) + trees`` rows; the trees number
``prod over internal nodes of V^k`` (i.i.d.) or ``V! / (V - k)!`` (WOR), so the LP is usable for V <= 3-4
and trees of 2-3 paths of depth <= 3 (``MAX_TREES`` and ``MAX_ROUND_SEQUENCES`` refuse the rest).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from resispec.drafting import DRAFTING_SCHEMES
from resispec.sequence.enumeration import MAX_TREES, Conditional, DraftedRound, RoundModels

POLISH_TOLERANCE = 1e-14
"""The largest equality residual a polished plan may keep (its exact law then holds to ~1e-14)."""


@dataclass(frozen=True)
class RoundPlan:
    """An optimal plan of the round LP: the drafted trees (``drafting``'s law), ``plans[t]`` (shape (N, V)) the
    joint mass ``x[t, n, y] = P(t) pi(n, y | t)``, and ``value``, the expected accepted draft tokens."""

    drafting: str
    rounds: list[DraftedRound]
    plans: list[np.ndarray]
    value: float


@dataclass(frozen=True)
class RoundSystem:
    """The round LP's equalities ``matrix x = rhs`` (rows: the ``V^(D+1)`` sequences, then one per tree; columns:
    ``(tree, node, token)`` in tree, node, token order), its objective ``gain`` (the node's depth) and the
    drafted trees, for ``solve_round_lp`` and for probes that add constraints of their own."""

    drafting: str
    rounds: list[DraftedRound]
    matrix: object  # scipy.sparse.csc_matrix, shape (V^(D+1) + trees, columns)
    rhs: np.ndarray
    gain: np.ndarray

    def split(self, x: np.ndarray) -> list[np.ndarray]:
        """A solution's columns as one (N, V) array per tree."""
        vocab = self.rounds[0].p.shape[1]
        parts = np.split(x, np.cumsum([d.tree.num_nodes * vocab for d in self.rounds])[:-1])
        return [part.reshape(-1, vocab) for part in parts]


def round_system(target: Conditional, draft: Conditional, vocab_size: int, branching: Sequence[int],
                 drafting: str = "iid", max_trees: int = 5_000) -> RoundSystem:
    """The round LP's constraints and objective (module doc)."""
    if drafting not in DRAFTING_SCHEMES:
        raise ValueError(f"drafting: one of {', '.join(DRAFTING_SCHEMES)}, got {drafting!r}")
    models = RoundModels(target, draft, vocab_size, branching)
    rows, cols, values, tree_mass, gain = [], [], [], [], []
    sequences = vocab_size ** (models.depth + 1)
    rounds = list(models.rounds(DRAFTING_SCHEMES[drafting], min(max_trees, MAX_TREES)))
    for t, drafted in enumerate(rounds):
        tree_mass.append(drafted.probability)
        for node, prefix in enumerate(drafted.prefixes):
            block = models.block(prefix)
            continuation = models.next_then_target(prefix)  # (V, sequences in block / V)
            width = continuation.shape[1]
            for y in range(vocab_size):
                start = block.start + y * width
                rows.extend([sequences + t, *range(start, start + width)])
                cols.extend([len(gain)] * (width + 1))
                values.extend([1.0, *continuation[y]])
                gain.append(float(drafted.tree.depths[node]))
    from scipy.sparse import coo_matrix  # deferred: see the resispec package doc

    matrix = coo_matrix((values, (rows, cols)), shape=(sequences + len(tree_mass), len(gain))).tocsc()
    return RoundSystem(drafting, rounds, matrix, np.concatenate([models.target_law(), tree_mass]), np.array(gain))


def solve_round_lp(target: Conditional, draft: Conditional, vocab_size: int, branching: Sequence[int],
                   drafting: str = "iid", max_trees: int = 5_000) -> RoundPlan:
    """An optimal, polished vertex of the round LP (module doc)."""
    system = round_system(target, draft, vocab_size, branching, drafting, max_trees)
    from scipy.optimize import linprog  # deferred: see the resispec package doc

    keep = np.arange(1, system.matrix.shape[0])  # the sequence rows sum to the tree rows: drop one, keep consistent
    result = linprog(-system.gain, A_eq=system.matrix[keep], b_eq=system.rhs[keep], bounds=(0, None),
                     method="highs-ds", options={"primal_feasibility_tolerance": 1e-10,
                                                "dual_feasibility_tolerance": 1e-10})
    if result.status != 0:
        raise RuntimeError(f"the round LP did not solve: {result.message}")
    x = _polish(system.matrix, system.rhs, result.x)
    return RoundPlan(drafting, system.rounds, system.split(x), float(system.gain @ x))


def _polish(matrix, rhs: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The vertex ``x`` clipped at 0 if that meets the equalities to ``POLISH_TOLERANCE``, else re-solved on its
    support by least squares (module doc); ``RuntimeError`` if neither does (a degenerate support)."""
    clipped = np.maximum(x, 0.0)
    if np.abs(matrix @ clipped - rhs).max() <= POLISH_TOLERANCE:
        return clipped
    support = np.flatnonzero(clipped > 0.0)
    polished = np.zeros_like(x)
    polished[support] = np.linalg.lstsq(matrix[:, support].toarray(), rhs, rcond=None)[0]
    if polished.min() < -POLISH_TOLERANCE or np.abs(matrix @ polished - rhs).max() > POLISH_TOLERANCE:
        raise RuntimeError("the round LP's vertex could not be polished to float64 precision")
    return np.maximum(polished, 0.0)


def optimal_round_acceptance(target: Conditional, draft: Conditional, vocab_size: int, branching: Sequence[int],
                             drafting: str = "iid", max_trees: int = 5_000) -> float:
    """The LP optimum of expected accepted draft tokens per round (module doc)."""
    return solve_round_lp(target, draft, vocab_size, branching, drafting, max_trees).value
