"""The thinned scan of a pooled_wor block, compiled: theta, D and L of every scanned token.

Notation of ``resispec.race`` (pairs ``(A, B)``, clock factors ``e``, ``r``, nodes and weights) and of
``resispec.verifiers.pooled_wor.plan`` (the rule). The block's tokens are visited in a fixed order;
with the earlier-scanned pair ``(A, B)`` (the other block's pair times the earlier tokens at weight
``1 - theta``) and y forced into S (y rings and is good), ``(A, B)(r_y X, q_y e_y) = (r_y X A,
q_y e_y A + r_y X B)``. Contracted with the later tokens' pair ``(A', B')`` at weight 1,

    D_y = int [X^(k-1)] (r_y X A B' + (q_y e_y A + r_y X B) A') dT,

and ``L_y`` is the same with the later tokens bad, i.e. ``(A', B')`` replaced by ``(e^{-q(later) T}, 0)``
(``e^{-q(later) T} = [X^0] A'``). Then ``theta_y = clip((p_y - L_y) / (D_y - L_y), 0, 1)`` (1 when
``D_y <= L_y``) and y joins the earlier pair at weight ``1 - theta_y``.

The later pairs come from a backward pass that keeps one every ``CHECKPOINT`` tokens; the forward
pass rebuilds them block by block, so memory stays O((n / CHECKPOINT + CHECKPOINT) k N) and the work
O(n k N): three token products and one contraction per token.
"""

from __future__ import annotations

import numba
import numpy as np

from resispec.race import CHECKPOINT, FAST, multiply_token, unit_pair


@numba.njit(cache=True, fastmath=FAST)
def _later_checkpoints(stay: np.ndarray, ring: np.ndarray, rate: np.ndarray, rows: np.ndarray, k: int
                       ) -> tuple[np.ndarray, np.ndarray]:
    """``(A[b], B[b])`` (each (blocks, k, N)): the pair at weight 1 of the rows after block b of ``rows``."""
    size, nodes = rows.size, stay.shape[1]
    blocks = (size + CHECKPOINT - 1) // CHECKPOINT
    out_a, out_b = np.empty((blocks, k, nodes)), np.empty((blocks, k, nodes))
    a, b = unit_pair(k, nodes)
    for i in range(size - 1, -1, -1):
        if i == size - 1 or (i + 1) % CHECKPOINT == 0:
            out_a[i // CHECKPOINT], out_b[i // CHECKPOINT] = a, b
        multiply_token(a, b, stay[rows[i]], ring[rows[i]], rate[rows[i]], 1.0)
    return out_a, out_b


@numba.njit(cache=True, fastmath=FAST)
def thinned_scan(stay: np.ndarray, ring: np.ndarray, rate: np.ndarray, p: np.ndarray, rows: np.ndarray,
                 other: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(theta, D, L)`` by position in ``rows`` (race rows with q > 0, in visiting order; ``p`` by
    row), the earlier pair starting at ``other`` (shape (2, k, N)); module docstring."""
    size = rows.size
    k, nodes = other.shape[1], other.shape[2]
    theta, reach, fallback = np.ones(size), np.zeros(size), np.zeros(size)
    checkpoint_a, checkpoint_b = _later_checkpoints(stay, ring, rate, rows, k)
    later_a, later_b = np.empty((CHECKPOINT, k, nodes)), np.empty((CHECKPOINT, k, nodes))
    a, b = other[0].copy(), other[1].copy()
    flux = np.empty(nodes)
    contracted = np.empty(nodes)
    last = np.empty(nodes)
    for block in range(checkpoint_a.shape[0]):
        start, end = block * CHECKPOINT, min(block * CHECKPOINT + CHECKPOINT, size)
        after_a, after_b = checkpoint_a[block].copy(), checkpoint_b[block].copy()
        for i in range(end - 1, start - 1, -1):
            later_a[i - start], later_b[i - start] = after_a, after_b
            multiply_token(after_a, after_b, stay[rows[i]], ring[rows[i]], rate[rows[i]], 1.0)
        for i in range(start, end):
            y = rows[i]
            e, r, q_y = stay[y], ring[y], rate[y]
            from_a, from_b = later_a[i - start], later_b[i - start]
            top_a, a_last = from_a[k - 1], a[k - 1]
            for n in range(nodes):
                flux[n] = q_y * e[n]
                contracted[n] = flux[n] * a[0, n] * top_a[n]
                last[n] = flux[n] * a_last[n]
            for j in range(1, k):
                a_j, a_below, b_below = a[j], a[j - 1], b[j - 1]
                opposite_a, opposite_b = from_a[k - 1 - j], from_b[k - 1 - j]
                for n in range(nodes):
                    contracted[n] += (r[n] * a_below[n] * opposite_b[n]
                                      + (flux[n] * a_j[n] + r[n] * b_below[n]) * opposite_a[n])
            if k > 1:
                b_next = b[k - 2]
                for n in range(nodes):
                    last[n] += r[n] * b_next[n]
            d, low = 0.0, 0.0
            decay = from_a[0]
            for n in range(nodes):
                d += weight[n] * contracted[n]
                low += weight[n] * last[n] * decay[n]
            low = min(low, d)
            spread = d - low
            chosen = 1.0 if spread <= 0 else min(1.0, max(0.0, (p[y] - low) / spread))
            theta[i], reach[i], fallback[i] = chosen, d, low
            multiply_token(a, b, e, r, q_y, 1.0 - chosen)
    return theta, reach, fallback
