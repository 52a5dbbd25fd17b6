"""Ratio profiles of B rows at once, for NumPy and torch: ``resispec.ratio_profile`` batched.

Per row, tokens sorted by ``p/q`` ascending (``q = 0`` counts as ``inf``; ties by token id) with prefix
sums ``P_i``, ``Q_i`` of p and q in that order (length V + 1, from 0):

- ``g(s) = sum_x min(p(x), s q(x)) = P_i + s (Q - Q_i)`` on piece i (the number of ratios ``<= s``);
- ``h(s) = s - g(s) = s Q_i - P_i``, and ``h`` at each finite breakpoint, ``rho_(i) Q_{i-1} - P_{i-1}``
  (``+inf`` past the finite ratios, so a search of a finite level never lands there).

One sort per row and two cumulative sums; every later evaluation is a row-wise ``searchsorted``
(O(log V) per point). Used by spectr's plan and by the engine's resispec, pooled and resispec_wor plans.
"""

from __future__ import annotations

import numpy as np
from array_api_compat import is_numpy_array, is_torch_array

from resispec.ratio_profile import sort_by_ratio
from resispec.rows import Array, float_errors_allowed, gather_rows, namespace, ordered_prefix_sums, searchsorted_rows


class RowRatioProfile:
    """Rows of ``(p, q)`` (validated float64, shape (B, V)) sorted by ratio, with prefix sums.

    Attributes: ``order`` (B, V) token ids by ratio; ``ratio`` (B, V) sorted ratios; ``p_prefix``,
    ``q_prefix`` (B, V + 1); ``h_at_ratio`` (B, V).
    """

    def __init__(self, p: Array, q: Array) -> None:
        xp = namespace(p, q)
        with float_errors_allowed(p):  # p / subnormal q may overflow to inf: still the right order
            ratio = xp.where(q == 0, xp.inf, p / q)
        self.ratio, self.order = sort_rows_by_ratio(ratio)
        self.p_prefix, self.q_prefix = ordered_prefix_sums(p, self.order), ordered_prefix_sums(q, self.order)
        # inf at the infinite ratios by itself: Q_{i-1} > 0 there (the first token has q > 0)
        self.h_at_ratio = self.ratio * self.q_prefix[:, :-1] - self.p_prefix[:, :-1]

    def piece_of(self, s: Array) -> Array:
        """Piece indices (integer, shape of s = (B, m)): the number of tokens with ratio ``<= s``."""
        return searchsorted_rows(self.ratio, s)

    def g_on_piece(self, s: Array, piece: Array) -> Array:
        """``g(s) = P_i + s (Q - Q_i)`` (B, m) with the pieces i given."""
        return (gather_rows(self.p_prefix, piece)
                + s * (self.q_prefix[:, -1:] - gather_rows(self.q_prefix, piece)))

    def g(self, s: Array) -> Array:
        """``g(s) = sum_x min(p(x), s q(x))`` at s (B, m), ``s >= 0``."""
        return self.g_on_piece(s, self.piece_of(s))

    def h(self, s: Array) -> Array:
        """``h(s) = s - g(s) = sum_x (s q(x) - p(x))+ = max(s Q_i - P_i, 0)`` at s (B, m), ``s >= 0``."""
        xp = namespace(s)
        piece = self.piece_of(s)
        return xp.maximum(s * gather_rows(self.q_prefix, piece) - gather_rows(self.p_prefix, piece), 0.0)


def sort_rows_by_ratio(ratio: Array) -> tuple[Array, Array]:
    """``(sorted ratios, token order)`` per row of ``ratio`` (B, V), non-negative, no NaN.

    The order is exact: ascending ratio, ties by ascending token id. On the CPU (NumPy, or torch on
    CPU), where this sort dominates a resispec or spectr verify, each row goes through the packed-key
    ``sort_by_ratio`` (about ten times faster than an argsort); on other devices a stable sort.
    """
    if is_torch_array(ratio) and ratio.device.type != "cpu":
        import torch

        return torch.sort(ratio, dim=-1, stable=True)
    rows = [sort_by_ratio(row) for row in (ratio if is_numpy_array(ratio) else ratio.numpy())]
    if len(rows) == 1:  # one row (the single-instance API): no stacking
        order, ordered = rows[0][0][None], rows[0][1][None]
    else:
        order, ordered = np.stack([row[0] for row in rows]), np.stack([row[1] for row in rows])
    if is_numpy_array(ratio):
        return ordered, order
    import torch

    return torch.from_numpy(ordered), torch.from_numpy(order)

