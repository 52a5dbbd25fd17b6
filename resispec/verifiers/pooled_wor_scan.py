"""The thinned scan of a pooled_wor block, compiled: theta, D and L of every scanned token.

Notation of ``resispec.race`` (pairs ``(A, B)``, clock factors ``e``, ``r``, nodes and weights) and of
``resispec.verifiers.pooled_wor_plan`` (the rule). The block's tokens are visited in a fixed order;
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

from resispec.race import CHECKPOINT, multiply_token


@numba.njit(cache=True)
def _later_checkpoints(stay: np.ndarray, ring: np.ndarray, q: np.ndarray, scan: np.ndarray, k: int) -> np.ndarray:
    """``out[b]`` (shape (2, k, N)): the pair at weight 1 of the tokens after block b of ``scan``."""
    size, nodes = scan.size, stay.shape[1]
    out = np.empty(((size + CHECKPOINT - 1) // CHECKPOINT, 2, k, nodes))
    pair = np.zeros((2, k, nodes))
    pair[0, 0, :] = 1.0
    for i in range(size - 1, -1, -1):
        if i == size - 1 or (i + 1) % CHECKPOINT == 0:
            out[i // CHECKPOINT] = pair
        multiply_token(pair[0], pair[1], stay[scan[i]], ring[scan[i]], q[scan[i]], 1.0)
    return out


@numba.njit(cache=True)
def thinned_scan(stay: np.ndarray, ring: np.ndarray, q: np.ndarray, p: np.ndarray, scan: np.ndarray,
                 other: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(theta, D, L)`` by position in ``scan`` (token ids with q > 0, in visiting order), the
    earlier pair starting at ``other`` (shape (2, k, N)); module docstring."""
    size = scan.size
    k, nodes = other.shape[1], other.shape[2]
    theta, reach, fallback = np.ones(size), np.zeros(size), np.zeros(size)
    checkpoints = _later_checkpoints(stay, ring, q, scan, k)
    later = np.empty((CHECKPOINT, 2, k, nodes))
    earlier = other.copy()
    flux = np.empty(nodes)
    contracted = np.empty(nodes)
    last = np.empty(nodes)
    for block in range(checkpoints.shape[0]):
        start, end = block * CHECKPOINT, min(block * CHECKPOINT + CHECKPOINT, size)
        pair = checkpoints[block].copy()
        for i in range(end - 1, start - 1, -1):
            later[i - start] = pair
            multiply_token(pair[0], pair[1], stay[scan[i]], ring[scan[i]], q[scan[i]], 1.0)
        for i in range(start, end):
            y = scan[i]
            e, r, rate = stay[y], ring[y], q[y]
            after_a, after_b = later[i - start, 0], later[i - start, 1]
            a, b = earlier[0], earlier[1]
            for n in range(nodes):
                flux[n] = rate * e[n]
                contracted[n] = flux[n] * a[0, n] * after_a[k - 1, n]
                last[n] = flux[n] * a[k - 1, n]
            for j in range(1, k):
                for n in range(nodes):
                    contracted[n] += (r[n] * a[j - 1, n] * after_b[k - 1 - j, n]
                                      + (flux[n] * a[j, n] + r[n] * b[j - 1, n]) * after_a[k - 1 - j, n])
            if k > 1:
                for n in range(nodes):
                    last[n] += r[n] * b[k - 2, n]
            d, low = 0.0, 0.0
            for n in range(nodes):
                d += weight[n] * contracted[n]
                low += weight[n] * last[n] * after_a[0, n]
            low = min(low, d)
            spread = d - low
            chosen = 1.0 if spread <= 0 else min(1.0, max(0.0, (p[y] - low) / spread))
            theta[i], reach[i], fallback[i] = chosen, d, low
            multiply_token(a, b, e, r, rate, 1.0 - chosen)
    return theta, reach, fallback
