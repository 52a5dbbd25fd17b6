"""The best achievable round: a linear program over the round's joint law (small V only).

Any round verifier is a conditional law ``pi(n, y | tree)`` of its outcome given the drafted tree. With
``x[t, n, y] = P(t) pi(n, y | t) >= 0`` the constraints are linear: ``sum_(n, y) x[t, n, y] = P(t)`` for
each tree t, and exactness, ``sum x[t, n, y] T(s | path(n) y) = T(s)`` for every sequence s of D + 1
tokens (``resispec.audit.round_law``). The optimum of ``max sum x[t, n, y] depth(n)`` is the largest
expected number of accepted draft tokens per round any exact verifier reaches on that tree law; every
verifier of ``resispec.sequence`` is one feasible point. Solved by HiGHS (``scipy.optimize.linprog``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from resispec.drafting import DRAFTING_SCHEMES
from resispec.sequence.enumeration import MAX_TREES, Conditional, RoundModels


def optimal_round_acceptance(target: Conditional, draft: Conditional, vocab_size: int, branching: Sequence[int],
                             drafting: str = "iid", max_trees: int = 5_000) -> float:
    """The LP optimum of expected accepted draft tokens per round (module doc)."""
    if drafting not in DRAFTING_SCHEMES:
        raise ValueError(f"drafting: one of {', '.join(DRAFTING_SCHEMES)}, got {drafting!r}")
    models = RoundModels(target, draft, vocab_size, branching)
    rows, cols, values, tree_mass, gain = [], [], [], [], []
    sequences = vocab_size ** (models.depth + 1)
    column = 0
    for t, drafted in enumerate(models.rounds(DRAFTING_SCHEMES[drafting], min(max_trees, MAX_TREES))):
        tree_mass.append(drafted.probability)
        for node, prefix in enumerate(drafted.prefixes):
            block = models.block(prefix)
            continuation = models.next_then_target(prefix)  # (V, sequences in block / V)
            width = continuation.shape[1]
            for y in range(vocab_size):
                start = block.start + y * width
                rows.extend([sequences + t, *range(start, start + width)])
                cols.extend([column] * (width + 1))
                values.extend([1.0, *continuation[y]])
                gain.append(float(drafted.tree.depths[node]))
                column += 1
    from scipy.optimize import linprog  # deferred: see the resispec package doc
    from scipy.sparse import coo_matrix

    matrix = coo_matrix((values, (rows, cols)), shape=(sequences + len(tree_mass), column)).tocsr()
    rhs = np.concatenate([models.target_law(), tree_mass])
    keep = np.arange(1, matrix.shape[0])  # the sequence rows sum to the tree rows: drop one, keep them consistent
    result = linprog(-np.array(gain), A_eq=matrix[keep], b_eq=rhs[keep], bounds=(0, None), method="highs")
    if result.status != 0:
        raise RuntimeError(f"the round LP did not solve: {result.message}")
    return float(-result.fun)
