"""The ratio profile of a pair: tokens sorted by ``p/q`` with prefix sums, and the functions on it.

With the ratios ``rho_(1) <= ... <= rho_(V)`` (``q = 0`` counts as ``rho = inf``) and prefix sums
``P_i``, ``Q_i`` of p and q in that order (``Q = Q_V`` the total):

- ``g(s) = sum_x min(p(x), s q(x)) = P_i + s (Q - Q_i)`` on piece i, ``rho_(i) <= s < rho_(i+1)``:
  concave, non-decreasing, piecewise linear with breakpoints at the ratios;
- ``h(s) = s - g(s) = sum_x (s q(x) - p(x))+ = s Q_i - P_i``: convex, non-decreasing, slope ``Q_i``;
  ``h^{-1}(y) = max{s : h(s) <= y} = (y + P_i) / Q_i`` on the piece i with
  ``h(rho_(i)) <= y < h(rho_(i+1))``.

One sort plus two prefix sums (O(V log V)) makes every later evaluation O(log V), vectorised over s.
"""

from __future__ import annotations

import numpy as np


class RatioProfile:
    """Tokens of ``(p, q)`` (validated, shape (V,)) sorted by ratio, with prefix sums."""

    def __init__(self, p: np.ndarray, q: np.ndarray) -> None:
        ratio = np.full(p.size, np.inf)
        with np.errstate(over="ignore"):  # p / subnormal q overflows to inf: still the right order
            np.divide(p, q, out=ratio, where=q > 0)
        self.order = np.argsort(ratio)
        self.ratio = ratio[self.order]
        self.p_sorted = p[self.order]
        self.q_sorted = q[self.order]
        self.p_prefix = _prefix_sums(self.p_sorted)
        self.q_prefix = _prefix_sums(self.q_sorted)
        # h at each finite breakpoint, h(rho_(i)) = rho_(i) Q_{i-1} - P_{i-1}, kept non-decreasing.
        finite = int(np.searchsorted(self.ratio, np.inf))
        h_at_ratio = self.ratio[:finite] * self.q_prefix[:finite]
        h_at_ratio -= self.p_prefix[:finite]
        self._h_at_ratio = np.maximum.accumulate(h_at_ratio)

    def piece_of(self, s: np.ndarray) -> np.ndarray:
        """The piece index of s: the number of tokens with ratio ``<= s``."""
        return np.searchsorted(self.ratio, s, side="right")

    def g_on_piece(self, s: np.ndarray, piece: np.ndarray) -> np.ndarray:
        """``g(s) = P_i + s (Q - Q_i)`` with the piece i given."""
        return self.p_prefix[piece] + s * (self.q_prefix[-1] - self.q_prefix[piece])

    def g(self, s: float | np.ndarray) -> float | np.ndarray:
        """``g(s) = sum_x min(p(x), s q(x))`` for ``s >= 0``."""
        s = np.asarray(s, dtype=np.float64)
        value = self.g_on_piece(s, self.piece_of(s))
        return float(value) if value.ndim == 0 else value

    def h(self, s: float | np.ndarray) -> float | np.ndarray:
        """``h(s) = s - g(s) = sum_x (s q(x) - p(x))+`` for ``s >= 0``."""
        s = np.asarray(s, dtype=np.float64)
        i = self.piece_of(s)
        value = np.maximum(s * self.q_prefix[i] - self.p_prefix[i], 0.0)
        return float(value) if value.ndim == 0 else value

    def h_inverse_piece(self, y: np.ndarray) -> np.ndarray:
        """The piece index i of ``h^{-1}(y)``: the number of breakpoints with ``h(rho_(i)) <= y``.

        It is >= 1 for ``y >= 0`` (``h(rho_(1)) = 0``; q has positive mass, so a finite ratio).
        """
        return np.searchsorted(self._h_at_ratio, y, side="right")

    def h_inverse_on_piece(self, y: np.ndarray, piece: np.ndarray) -> np.ndarray:
        """``(y + P_i) / Q_i`` with the piece i given (never below the piece's breakpoint)."""
        return np.maximum((y + self.p_prefix[piece]) / self.q_prefix[piece], self.ratio[piece - 1])

    def h_inverse(self, y: float | np.ndarray) -> float | np.ndarray:
        """``h^{-1}(y) = max{s >= 0 : h(s) <= y}`` for ``y >= 0``, exact on h's linear pieces."""
        y = np.asarray(y, dtype=np.float64)
        value = self.h_inverse_on_piece(y, self.h_inverse_piece(y))
        return float(value) if value.ndim == 0 else value


def _prefix_sums(values: np.ndarray) -> np.ndarray:
    """``[0, v_1, v_1 + v_2, ...]`` (length V + 1)."""
    prefix = np.empty(values.size + 1)
    prefix[0] = 0.0
    np.cumsum(values, out=prefix[1:])
    return prefix
