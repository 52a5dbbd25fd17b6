"""Batched ratio profiles: torch port of ``resispec.ratio_profile.RatioProfile``.

Per node (row), tokens sorted by ``p/q`` ascending (``q = 0`` counts as ``inf``; ties by token id)
with prefix sums ``P_i``, ``Q_i`` of p and q in that order (length V + 1, from 0):

- ``g(s) = sum_x min(p(x), s q(x)) = P_i + s (Q - Q_i)`` on piece i (the number of ratios ``<= s``);
- ``h(s) = s - g(s) = s Q_i - P_i``, and ``h`` at each finite breakpoint, ``rho_(i) Q_{i-1} - P_{i-1}``
  (``+inf`` past the finite ratios, so a search of a finite level never lands there).

One stable sort of (B, V) and two cumulative sums; every later evaluation is a batched
``searchsorted`` (O(log V) per point).
"""

from __future__ import annotations

import torch


class TorchRatioProfile:
    """Rows of ``(p, q)`` (validated float64, shape (B, V)) sorted by ratio, with prefix sums.

    Attributes: ``ratio`` (B, V) sorted ratios; ``p_prefix``, ``q_prefix`` (B, V + 1);
    ``h_at_ratio`` (B, V).
    """

    def __init__(self, p: torch.Tensor, q: torch.Tensor) -> None:
        ratio = torch.where(q == 0, torch.inf, p / q)  # p / subnormal q may overflow to inf: same order
        self.ratio, order = torch.sort(ratio, dim=-1, stable=True)
        zero = p.new_zeros(p.shape[0], 1)
        self.p_prefix = torch.cat([zero, torch.cumsum(p.gather(1, order), dim=-1)], dim=-1)
        self.q_prefix = torch.cat([zero, torch.cumsum(q.gather(1, order), dim=-1)], dim=-1)
        h_at_ratio = self.ratio * self.q_prefix[:, :-1] - self.p_prefix[:, :-1]
        self.h_at_ratio = torch.where(torch.isfinite(self.ratio), h_at_ratio, torch.inf)

    def piece_of(self, s: torch.Tensor) -> torch.Tensor:
        """Piece indices (long, shape of s = (B, m)): the number of tokens with ratio ``<= s``."""
        return torch.searchsorted(self.ratio, s, right=True)

    def g_on_piece(self, s: torch.Tensor, piece: torch.Tensor) -> torch.Tensor:
        """``g(s) = P_i + s (Q - Q_i)`` (B, m) with the pieces i given."""
        return self.p_prefix.gather(1, piece) + s * (self.q_prefix[:, -1:] - self.q_prefix.gather(1, piece))

    def g(self, s: torch.Tensor) -> torch.Tensor:
        """``g(s) = sum_x min(p(x), s q(x))`` at s (B, m), ``s >= 0``."""
        return self.g_on_piece(s, self.piece_of(s))
