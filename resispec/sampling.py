"""Inverse-CDF sampling, the one primitive that turns a uniform into a token.

Randomness convention (shared by the NumPy reference and the torch engine): a draw from a
non-negative weight vector ``w`` with a uniform ``u in [0, 1)`` returns the smallest token id ``y``
(ids in ascending order) with ``cumsum(w)[y] > u * sum(w)``. That token always has ``w[y] > 0``.
"""

from __future__ import annotations

import numpy as np

from resispec.rows import Array, device_of, namespace, searchsorted_rows

BLOCK = 256
"""Tokens per block of the two-level cumulative sum used for large vocabularies."""


def inverse_cdf(weights: np.ndarray, u: float | np.ndarray) -> int | np.ndarray:
    """Token(s) drawn from ``weights / sum(weights)`` by the inverse CDF at ``u`` (scalar or array).

    ``weights`` (shape (V,)) must be non-negative with a positive sum. For V > 4 BLOCK the
    cumulative sum is two-level (block totals, then one block), which avoids a full sequential
    cumsum; the intervals still tile the total mass in token order. Rounding can put ``u * sum(w)``
    at or past the last cumulative value; the draw is then the last token of positive weight, so a
    zero-weight token is never returned.
    """
    if weights.size > 4 * BLOCK and np.ndim(u) == 0:
        return _inverse_cdf_blocked(weights, float(u))
    return InverseCDF(weights)(u)


class InverseCDF:
    """``inverse_cdf`` with the cumulative sum of ``weights`` (shape (V,)) computed once.

    For many draws from one weight vector: each draw is then one ``searchsorted``, O(log V). The rule
    is ``inverse_cdf``'s (smallest id with ``cumsum(w)[y] > u * sum(w)``, rounding past the end goes to
    the last token of positive weight) over a plain sequential cumulative sum.
    """

    def __init__(self, weights: np.ndarray) -> None:
        self.weights = weights
        self.cumulative = np.cumsum(weights)
        self.total = self.cumulative[-1]
        if not self.total > 0:
            raise ValueError("inverse_cdf: the weights have no positive mass to sample from")

    def __call__(self, u: float | np.ndarray) -> int | np.ndarray:
        index = np.searchsorted(self.cumulative, np.asarray(u) * self.total, side="right")
        if np.any(index >= self.weights.size):
            index = np.minimum(index, np.flatnonzero(self.weights > 0)[-1])
        return int(index) if index.ndim == 0 else index.astype(np.int64)


def _inverse_cdf_blocked(weights: np.ndarray, u: float) -> int:
    """One inverse-CDF draw with block totals: find the block, then the token inside it."""
    full = weights.size // BLOCK
    block_sums = np.empty(-(-weights.size // BLOCK))
    block_sums[:full] = weights[: full * BLOCK].reshape(full, BLOCK).sum(axis=1)
    block_sums[full:] = weights[full * BLOCK:].sum()
    block_cumulative = np.cumsum(block_sums, out=block_sums)
    total = block_cumulative[-1]
    if not total > 0:
        raise ValueError("inverse_cdf: the weights have no positive mass to sample from")
    target = u * total
    block = int(np.searchsorted(block_cumulative, target, side="right"))
    if block >= block_cumulative.size:
        return int(np.flatnonzero(weights > 0)[-1])
    start = block * BLOCK
    inside = np.cumsum(weights[start:start + BLOCK])
    inside += block_cumulative[block - 1] if block else 0.0
    offset = int(np.searchsorted(inside, target, side="right"))
    if offset >= inside.size:  # rounding between the block total and the in-block sums
        offset = int(np.flatnonzero(weights[start:start + BLOCK] > 0)[-1])
    return start + offset


class RowInverseCDF:
    """``inverse_cdf`` for B weight rows at once (``weights`` (B, V), >= 0; NumPy or torch, any device),
    each row's cumulative sum computed once.

    Each draw is the rule above over a plain sequential cumulative sum, one row-wise ``searchsorted``,
    O(log V): the smallest id ``y`` with ``cumsum(w)[y] > u sum(w)``, rounding past the end going to the
    row's last token of positive weight. A row without positive weight draws -1 (the caller decides what
    it emits; its value is never read when the row is decided otherwise). No host synchronisation.
    ``total`` (B,) holds each row's sum.
    """

    def __init__(self, weights: Array) -> None:
        xp = namespace(weights)
        self.xp = xp
        self.cumulative = xp.cumulative_sum(weights, axis=-1)
        self.total = self.cumulative[:, -1]
        ids = xp.arange(weights.shape[-1], dtype=xp.int64, device=device_of(weights))
        self.last_positive = xp.max(xp.where(weights > 0, ids, -1), axis=-1)

    def __call__(self, u: Array) -> Array:
        """Token ids (int64, the shape of ``u``: (B,) or (B, m))."""
        xp = self.xp
        flat = u.ndim == 1
        index = searchsorted_rows(self.cumulative, (u[:, None] if flat else u) * self.total[:, None])
        index = xp.minimum(xp.astype(index, xp.int64), self.last_positive[:, None])
        return index[:, 0] if flat else index


def inverse_cdf_rows(weights: Array, u: Array) -> Array:
    """Token ids drawn by inverse CDF, one weight row (``weights`` (B, V)) per row of ``u`` ((B,) or (B, m));
    -1 in a row without positive weight (``RowInverseCDF``)."""
    return RowInverseCDF(weights)(u)
