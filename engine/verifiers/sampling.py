"""Batched inverse-CDF sampling: torch port of ``resispec.sampling.inverse_cdf`` and ``InverseCDF``.

The shared randomness convention: a draw from non-negative weights ``w`` with a uniform ``u`` in
``[0, 1)`` is the smallest token id ``y`` with ``cumsum(w)[y] > u * sum(w)``; if rounding puts
``u * sum(w)`` at or past the last cumulative value, the draw is the last token of positive weight.
"""

from __future__ import annotations

import torch


class TorchInverseCDF:
    """``inverse_cdf`` with each row's cumulative sum computed once (``weights`` (B, V) float64, >= 0).

    For verifiers that prepare a residual per node before the uniforms are known: each draw is then
    one ``searchsorted``, O(log V) per node.
    """

    def __init__(self, weights: torch.Tensor) -> None:
        self.cumulative = torch.cumsum(weights, dim=-1)
        self.total = self.cumulative[:, -1:]
        ids = torch.arange(weights.shape[-1], dtype=torch.int32, device=weights.device)
        self.last_positive = ((weights > 0) * ids).amax(dim=-1, keepdim=True)

    def __call__(self, u: torch.Tensor) -> torch.Tensor:
        """Token ids (long, shape of ``u``: (B,) or (B, m)); -1 in a row without positive weight; no host sync."""
        flat = u.ndim == 1
        index = torch.searchsorted(self.cumulative, (u[:, None] if flat else u) * self.total, right=True)
        # A draw is never past the last positive weight (the cumulative sum stays flat after it), except
        # the overshoot index V, which this minimum maps onto it.
        index = torch.where(self.total > 0, torch.minimum(index, self.last_positive), -1)
        return index[:, 0] if flat else index


def inverse_cdf(weights: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Token ids (long, shape of ``u``) drawn by inverse CDF, one weight row per batch row.

    ``weights``: (B, V) non-negative float64; ``u``: (B,) or (B, m) float64 in ``[0, 1)``. A row
    without positive weight gives -1 (the caller decides what such a row emits); no host sync.
    """
    return TorchInverseCDF(weights)(u)
