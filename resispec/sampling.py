"""Inverse-CDF sampling, the one primitive that turns a uniform into a token.

Randomness convention (shared by the NumPy reference and the torch engine): a draw from a
non-negative weight vector ``w`` with a uniform ``u in [0, 1)`` returns the smallest token id ``y``
(ids in ascending order) with ``cumsum(w)[y] > u * sum(w)``. That token always has ``w[y] > 0``.
"""

from __future__ import annotations

import numpy as np


def inverse_cdf(weights: np.ndarray, u: float | np.ndarray) -> int | np.ndarray:
    """Token(s) drawn from ``weights / sum(weights)`` by the inverse CDF at ``u`` (scalar or array).

    ``weights`` (shape (V,)) must be non-negative with a positive sum. Rounding can put
    ``u * sum(w)`` at or past the last cumulative value; the draw is then the last token of positive
    weight, so a zero-weight token is never returned.
    """
    cumulative = np.cumsum(weights)
    total = cumulative[-1]
    if not total > 0:
        raise ValueError("inverse_cdf: the weights have no positive mass to sample from")
    index = np.searchsorted(cumulative, np.asarray(u) * total, side="right")
    if np.any(index >= weights.size):
        index = np.minimum(index, np.flatnonzero(weights > 0)[-1])
    return int(index) if index.ndim == 0 else index.astype(np.int64)
