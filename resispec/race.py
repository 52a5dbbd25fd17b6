"""The exponential race of WOR draws on a quadrature grid, with compiled pair products.

k draws without replacement (WOR) from q are the first k arrivals of independent clocks
``E_x ~ Exp(q_x)`` (docs/resispec_wor.md, section 6). With ``e_x = exp(-q_x T)``, ``r_x = 1 - e_x`` and
weights ``w_x`` in [0, 1] (token x "good" with probability ``w_x``), a token set has the *pair* of
polynomials in X truncated at ``X^k``

    A = prod_x (e_x + w_x r_x X),     B = sum_z q_z e_z w_z prod_{x != z} (e_x + w_x r_x X),

``[X^j] A`` the probability that by time T no bad clock and exactly j good ones rang, ``[X^j] B`` the
density of a good arrival at T on the event that j others (good) rang before it. Pairs of disjoint
sets compose as ``(A1, B1)(A2, B2) = (A1 A2, A1 B2 + B1 A2)`` with positive coefficients only (nothing
cancels). Race integrals ``int_0^inf [X^(k-1)] B dT`` (k good arrivals before any bad one, the last at
T) are taken by the trapezoid rule in s, with ``ln T = u(s) = s - exp(-s)`` (``dT = T (1 + exp(-s)) ds``).
For large T the map is ``ln T`` itself, where the integrands are analytic in the strip
``|Im u| < pi/2`` and decay there: the error is about ``exp(-pi^2 / STEP)`` (Trefethen & Weideman 2014).
For small T the extra ``-exp(-s)`` makes the left tail, which decays only like ``T^k = e^(k u)`` in u,
decay double-exponentially in s (the double-exponential substitution of Takahasi & Mori, applied to the
left end only): it acts where ``|T| <= e^s`` is at most about 1, where the integrands (entire in T,
growing at most like ``exp(|T|)``) are bounded whatever the argument of T, so the strip and the rate are
kept while the nodes left of T = 1 drop from ``ln(1 / T_lo) / STEP`` (up to 100 at k = 2) to a handful:
33 nodes instead of 71 at k = 4, 37 instead of 123 at k = 2 on the V = 49152 LLM-like pair. Measured
(tests/resispec/test_race.py): on 13 drafts and k = 1, 2, 4, 6 every ``P_k``, ``D`` and ``L`` agrees with the plain
``ln T`` rule at step 0.05 to rounding (below 1e-13). Each truncated tail is at most ``TAIL``:

- left: the integrand is at most the density of the k-th arrival overall, and
  ``P(k clocks rang by T_lo) <= e_k(q) T_lo^k <= T_lo^k / k!``;
- right: before the k-th arrival at most k - 1 clocks rang, so the arrival rate is at least ``m_k``,
  the q-mass outside the k - 1 heaviest tokens; the k-th arrival time is then stochastically below a
  Gamma(k, m_k) time, whose tail ``P(Gamma(k, 1) > m_k T_hi)`` is ``TAIL`` at ``T_hi``.

``P_k(H)`` (all k draws in H) is the race with H good and the rest bad: ``int e^{-q(V - H) T}
[X^(k-1)] B_H dT`` (the k-th arrival in H at T, none outside before), ``prefix_all_in`` evaluates it for
every prefix of a token order in one pass.

The kernels are compiled with numba (``cache=True``); they loop over tokens sequentially and over the
N nodes innermost, O(k N) per token.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from scipy.special import gammainccinv, lambertw

STEP = 0.2
"""Trapezoid step in s (``ln T = s - exp(-s)``; error about ``exp(-pi^2 / STEP)``, far below rounding)."""

TAIL = 1e-18
"""Each truncated tail of a race integral is at most this."""

CHECKPOINT = 64
"""Tokens between stored suffix products in the compiled passes (memory O(V / CHECKPOINT * k N))."""

FAST = {"contract", "reassoc"}
"""LLVM flags of the compiled kernels: fused multiply-adds and reassociated sums (so the node loops
vectorise); they change results at the rounding level only (every term is positive or a product)."""


@dataclass(frozen=True)
class RaceGrid:
    """Quadrature nodes ``t`` (ascending, an odd count; ``ln t = s - exp(-s)`` on equally spaced s),
    the step ``step`` in s (at most STEP), trapezoid weights ``weight = step t (1 + exp(-s))``
    (``dT = T (1 + exp(-s)) ds``) and ``coarse``: the weights of the same rule on every other node
    (step 2 step), whose difference from the fine sum estimates the fine sum's error."""

    t: np.ndarray
    step: float
    weight: np.ndarray
    coarse: np.ndarray


def heavy_free_mass(q: np.ndarray, k: int) -> float:
    """``m_k``: the q-mass outside the k - 1 heaviest tokens."""
    kept = q.size - (k - 1)
    if kept <= 0:
        return 0.0
    return float(np.partition(q, kept - 1)[:kept].sum())


def substitution_point(log_t: float) -> float:
    """The s with ``s - exp(-s) = ln T`` (``log_t``): ``s = ln T + W(1 / T)``, W the Lambert function
    (``w = s - ln T`` solves ``w e^w = 1 / T``)."""
    return log_t + float(lambertw(math.exp(-log_t)).real)


def race_grid(q: np.ndarray, k: int) -> RaceGrid:
    """The nodes of the module docstring for draft q and k draws (``m_k > 0``)."""
    log_lo = (math.log(TAIL) + math.lgamma(k + 1)) / k  # ln T_lo, T_lo^k / k! = TAIL, in logs past k = 170
    log_hi = math.log(float(gammainccinv(k, TAIL)) / max(heavy_free_mass(q, k), 1e-300))
    s_lo, s_hi = substitution_point(log_lo), substitution_point(log_hi)
    count = 2 * max(1, math.ceil((s_hi - s_lo) / (2 * STEP))) + 1
    s = np.linspace(s_lo, s_hi, count)
    step = float(s[1] - s[0])
    stretch = np.exp(-s)
    t = np.exp(s - stretch)
    weight = step * t * (1.0 + stretch)
    coarse = np.zeros(count)
    coarse[::2] = 2.0 * weight[::2]
    return RaceGrid(t=t, step=step, weight=weight, coarse=coarse)


@dataclass(frozen=True)
class Race:
    """The race of one draft q with k draws on its grid, tokens in a fixed ``order`` (token ids; row i
    is token ``order[i]``): ``rate`` (V,) is ``q[order]``, ``stay`` and ``ring`` (shape (V, N)) are
    ``e_x = exp(-q_x T)`` and ``r_x = 1 - e_x`` (by expm1) at the nodes, computed once. Kernels take
    rows, so a block of consecutive rows is read from consecutive memory."""

    order: np.ndarray
    rate: np.ndarray
    k: int
    grid: RaceGrid
    stay: np.ndarray
    ring: np.ndarray

    @classmethod
    def of(cls, q: np.ndarray, k: int, order: np.ndarray) -> Race:
        """The race of draft q (by token id) for k draws, rows in ``order``."""
        grid = race_grid(q, k)
        rate = q[order]
        stay = np.multiply.outer(-rate, grid.t)  # the exponent, then e = exp(exponent) in place
        ring = np.expm1(stay)
        np.negative(ring, out=ring)  # in place: one (V, N) array less to allocate
        return cls(order=order, rate=rate, k=k, grid=grid, stay=np.exp(stay, out=stay), ring=ring)

    def all_in_prefixes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(value, error, pairs)``: ``P_k`` of every prefix of the order (index i: the first i tokens) and
        its error estimate, both tails plus the discretisation error: the every-other-node sum
        (step 2h) differs from the fine one by about its own error ``C exp(-pi^2 / 2h)``; at the
        geometric rate the fine error is ``C exp(-pi^2 / h)``, that difference times
        ``exp(-pi^2 / 2h)``. Prefixes holding all of q's mass get exactly 1 (error 0). ``pairs``: the
        prefix pairs every CHECKPOINT rows (``prefix_all_in``), for ``prefix_pair``."""
        fine, rough, pairs = prefix_all_in(self.stay, self.ring, self.rate, self.k, self.grid.weight,
                                           self.grid.coarse)
        error = np.abs(fine - rough) * np.exp(-np.pi ** 2 / (2 * self.grid.step)) + 2 * TAIL
        rest = np.append(np.cumsum(self.rate[::-1])[::-1], 0.0)
        fine[rest <= 0], error[rest <= 0] = 1.0, 0.0
        return fine, error, pairs

    def prefix_pair(self, cut: int, pairs: np.ndarray) -> np.ndarray:
        """The pair (shape (2, k, N)) of the first ``cut`` rows at weight 1, from the prefix pairs
        ``pairs`` of ``all_in_prefixes`` and at most CHECKPOINT token products (the same products in
        the same order as one pass from row 0)."""
        block = min(cut // CHECKPOINT, pairs.shape[0] - 1)
        return pair_of(self.stay, self.ring, self.rate, np.arange(block * CHECKPOINT, cut), pairs[block])


@numba.njit(cache=True, fastmath=FAST, inline="always")
def multiply_token(a: np.ndarray, b: np.ndarray, stay: np.ndarray, ring: np.ndarray, rate: float,
                   weight: float) -> None:
    """``(a, b) <- (a, b)(e + w r X, q e w)`` in place (coefficients of shape (k, N); ``a`` and ``b``
    separate arrays, row by row so that the node loop vectorises; inlined into its callers)."""
    k, nodes = a.shape
    for j in range(k - 1, 0, -1):
        a_j, b_j, a_below, b_below = a[j], b[j], a[j - 1], b[j - 1]
        for n in range(nodes):
            good = weight * ring[n]
            new_b = b_j[n] * stay[n] + good * b_below[n] + weight * rate * stay[n] * a_j[n]
            a_j[n] = a_j[n] * stay[n] + good * a_below[n]
            b_j[n] = new_b
    a_0, b_0 = a[0], b[0]
    for n in range(nodes):
        b_0[n] = b_0[n] * stay[n] + weight * rate * stay[n] * a_0[n]
        a_0[n] *= stay[n]


@numba.njit(cache=True, fastmath=FAST)
def unit_pair(k: int, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """``(A, B) = (1, 0)``, the pair of no token, as two (k, N) arrays."""
    a = np.zeros((k, nodes))
    a[0, :] = 1.0
    return a, np.zeros((k, nodes))


@numba.njit(cache=True, fastmath=FAST)
def pair_of(stay: np.ndarray, ring: np.ndarray, rate: np.ndarray, rows: np.ndarray, start: np.ndarray
            ) -> np.ndarray:
    """The pair (shape (2, k, N)) ``start`` times the tokens in ``rows`` at weight 1."""
    k = start.shape[1]
    a, b = start[0].copy(), start[1].copy()
    for i in rows:
        if rate[i] > 0:
            multiply_token(a, b, stay[i], ring[i], rate[i], 1.0)
    pair = np.empty((2, k, stay.shape[1]))
    pair[0], pair[1] = a, b
    return pair


@numba.njit(cache=True, fastmath=FAST)
def prefix_all_in(stay: np.ndarray, ring: np.ndarray, rate: np.ndarray, k: int, weight: np.ndarray,
                  coarse: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(fine, coarse, pairs)``: sums of ``P_k`` of every prefix of the rows (index i: the first i,
    i = 0..V), ``int e^{-q(rest) T} [X^(k-1)] B_prefix dT`` with the fine and the every-other-node rule,
    and ``pairs[b]`` (shape (blocks, 2, k, N)): the pair of the rows before row ``b CHECKPOINT``.

    One forward pass carries the prefix's pair; ``e^{-q(rest) T}`` is the product of the later rows'
    ``e_x``, kept at every CHECKPOINT-th row by a backward pass and rebuilt block by block."""
    size, nodes = rate.size, weight.size
    blocks = (size + CHECKPOINT - 1) // CHECKPOINT
    rest_at = np.empty((blocks, nodes))  # rest_at[b]: prod of e_x over the rows after block b
    rest = np.ones(nodes)
    for i in range(size - 1, -1, -1):
        if i == size - 1 or (i + 1) % CHECKPOINT == 0:
            rest_at[i // CHECKPOINT] = rest
        rest *= stay[i]
    fine, rough = np.zeros(size + 1), np.zeros(size + 1)
    a, b = unit_pair(k, nodes)
    pairs = np.empty((blocks, 2, k, nodes))
    decay = np.empty((CHECKPOINT, nodes))
    for block in range(blocks):
        start, end = block * CHECKPOINT, min(block * CHECKPOINT + CHECKPOINT, size)
        pairs[block, 0], pairs[block, 1] = a, b
        rest = rest_at[block].copy()
        for i in range(end - 1, start - 1, -1):
            decay[i - start] = rest
            rest *= stay[i]
        for i in range(start, end):
            if rate[i] > 0:
                multiply_token(a, b, stay[i], ring[i], rate[i], 1.0)
            total, total_rough = 0.0, 0.0
            for n in range(nodes):
                value = decay[i - start, n] * b[k - 1, n]
                total += weight[n] * value
                total_rough += coarse[n] * value
            fine[i + 1], rough[i + 1] = total, total_rough
    return fine, rough, pairs
