"""The ratio profile of a pair: tokens sorted by ``p/q`` with prefix sums, and the functions on it.

With the ratios ``rho_(1) <= ... <= rho_(V)`` (``q = 0`` counts as ``rho = inf``) and prefix sums
``P_i``, ``Q_i`` of p and q in that order:

- ``g(s) = sum_x min(p(x), s q(x)) = P_i + s (1 - Q_i)`` for ``rho_(i) <= s < rho_(i+1)``: concave,
  non-decreasing, piecewise linear with breakpoints at the ratios;
- ``h(s) = s - g(s) = sum_x (s q(x) - p(x))+ = s Q_i - P_i``: convex, non-decreasing, with slope
  ``Q_i``; ``h^{-1}(y) = max{s : h(s) <= y} = (y + P_i) / Q_i`` on the piece that contains it.

One sort plus two prefix sums (O(V log V)) makes every later evaluation O(log V), vectorised over s.
"""

from __future__ import annotations

import numpy as np


class RatioProfile:
    """Tokens of ``(p, q)`` (validated, shape (V,)) sorted by ratio, with prefix sums."""

    def __init__(self, p: np.ndarray, q: np.ndarray) -> None:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(q > 0, p / q, np.inf)
        self.order = np.argsort(ratio)
        self.ratio = ratio[self.order]
        self.p_sorted = p[self.order]
        self.q_sorted = q[self.order]
        zero = np.zeros(1)
        self.p_prefix = np.concatenate([zero, np.cumsum(self.p_sorted)])
        self.q_prefix = np.concatenate([zero, np.cumsum(self.q_sorted)])
        # h at each finite breakpoint: h(rho_(i)) = rho_(i) Q_{i-1} - P_{i-1} (non-decreasing).
        finite = np.isfinite(self.ratio)
        self._finite_count = int(finite.sum())
        self._h_at_ratio = np.maximum.accumulate(
            self.ratio[finite] * self.q_prefix[: self._finite_count] - self.p_prefix[: self._finite_count]
        ) if self._finite_count else np.zeros(0)

    def piece_of(self, s: np.ndarray) -> np.ndarray:
        """Number of tokens with ratio ``<= s`` (the piece index i of s)."""
        return np.searchsorted(self.ratio, s, side="right")

    def g(self, s: float | np.ndarray) -> float | np.ndarray:
        """``g(s) = sum_x min(p(x), s q(x))`` for ``s >= 0``."""
        s = np.asarray(s, dtype=np.float64)
        i = self.piece_of(s)
        value = self.p_prefix[i] + s * (self.q_prefix[-1] - self.q_prefix[i])
        return float(value) if value.ndim == 0 else value

    def h(self, s: float | np.ndarray) -> float | np.ndarray:
        """``h(s) = s - g(s) = sum_x (s q(x) - p(x))+`` for ``s >= 0``."""
        s = np.asarray(s, dtype=np.float64)
        i = self.piece_of(s)
        value = np.maximum(s * self.q_prefix[i] - self.p_prefix[i], 0.0)
        return float(value) if value.ndim == 0 else value

    def h_inverse_piece(self, y: np.ndarray) -> np.ndarray:
        """The piece index i of ``h^{-1}(y)``: the number of breakpoints with ``h(rho_(i)) <= y``."""
        return np.searchsorted(self._h_at_ratio, y, side="right")

    def h_inverse(self, y: float | np.ndarray) -> float | np.ndarray:
        """``h^{-1}(y) = max{s >= 0 : h(s) <= y}`` for ``y >= 0``, exact on h's linear pieces.

        On piece i (``h(rho_(i)) <= y < h(rho_(i+1))``) ``h(s) = s Q_i - P_i`` with ``Q_i > 0``, so
        ``s = (y + P_i) / Q_i``. At least one breakpoint always qualifies (``h(rho_(1)) = 0``)
        because q has positive mass, hence a finite ratio.
        """
        y = np.asarray(y, dtype=np.float64)
        i = self.h_inverse_piece(y)
        value = np.maximum((y + self.p_prefix[i]) / self.q_prefix[i], self.ratio[i - 1])
        return float(value) if value.ndim == 0 else value
