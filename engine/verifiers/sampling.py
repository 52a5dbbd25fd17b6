"""Batched inverse-CDF sampling: torch port of ``resispec.sampling.inverse_cdf``.

The shared randomness convention: a draw from non-negative weights ``w`` with a uniform ``u`` in
``[0, 1)`` is the smallest token id ``y`` with ``cumsum(w)[y] > u * sum(w)``; if rounding puts
``u * sum(w)`` at or past the last cumulative value, the draw is the last token of positive weight.
"""

from __future__ import annotations

import torch


def inverse_cdf(weights: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Token ids (long, shape of ``u``) drawn by inverse CDF, one weight row per batch row.

    ``weights``: (B, V) non-negative float64; ``u``: (B,) or (B, m) float64 in ``[0, 1)``. A row
    without positive weight gives -1 (the caller decides what such a row emits); no host sync.
    """
    cumulative = torch.cumsum(weights, dim=-1)
    flat = u.ndim == 1
    levels = (u[:, None] if flat else u) * cumulative[:, -1:]
    index = torch.searchsorted(cumulative, levels, right=True)
    ids = torch.arange(weights.shape[-1], device=weights.device)
    last_positive = torch.where(weights > 0, ids, -1).amax(dim=-1, keepdim=True)
    index = torch.where(index >= weights.shape[-1], last_positive, index)
    return index[:, 0] if flat else index
