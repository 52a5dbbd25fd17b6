"""Exactly mergeable sums, and per-node uniforms keyed by the node's id.

**Fixed-point sums.** A float ``v`` (|v| < 8) counts as the integer ``round(v 2^60)``; sums of these
integers are kept as Python integers, so adding shards in any grouping and order gives the same
total, bit for bit. Each term is off by at most ``2^-61`` (about 4e-19), the total by at most
``N 2^-61``. Vectorised: the int64 terms are split into ``high = x >> 30`` and ``low = x & (2^30 - 1)``,
each summed in int64 without overflow for up to 2^29 terms per call.

**Node uniforms.** ``u = splitmix64(id XOR splitmix64(seed + 1)) / 2^64`` (top 53 bits), a fixed
function of the node's id and the seed, so a node's randomized PIT does not depend on which shard
or batch it is read in. splitmix64 is the generator of Java's SplittableRandom (Steele, Lea and
Flood, 2014); consecutive ids give well-mixed outputs. A vectorised hash, because one numpy Generator
per node costs about 70 microseconds here.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

SCALE_BITS = 60
LIMIT = 8.0
"""Largest magnitude a fixed-point term may have (``8 * 2^60 = 2^63``)."""
_SPLIT = 30
_MASK = (1 << _SPLIT) - 1


def fixed_sums(values: np.ndarray) -> list[int]:
    """Column sums of ``values`` (shape (N,) or (N, C)) in units of ``2^-60`` (see module doc)."""
    array = np.asarray(values, dtype=np.float64)
    matrix = array.reshape(array.shape[0], -1)
    if not np.isfinite(matrix).all() or (np.abs(matrix) >= LIMIT).any():
        raise ValueError(f"values: fixed-point terms must be finite and below {LIMIT} in magnitude")
    scaled = np.rint(np.ldexp(matrix, SCALE_BITS)).astype(np.int64)
    high, low = scaled >> _SPLIT, scaled & _MASK
    return [(int(h) << _SPLIT) + int(lo) for h, lo in zip(high.sum(axis=0), low.sum(axis=0))]


def fixed_sum(values: np.ndarray) -> int:
    """Sum of a 1-D array in units of ``2^-60``."""
    return fixed_sums(np.asarray(values).reshape(-1))[0]


def as_fraction(total: int) -> Fraction:
    """A fixed-point total as an exact fraction."""
    return Fraction(total, 1 << SCALE_BITS)


def as_float(total: int) -> float:
    """A fixed-point total as the nearest float."""
    return total / (1 << SCALE_BITS)


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def node_uniforms(node_ids: np.ndarray, seed: int) -> np.ndarray:
    """One Uniform[0, 1) per node id (int64, shape (N,)), a fixed function of the id and ``seed``."""
    key = _splitmix64(np.array([seed + 1], dtype=np.uint64))[0]
    mixed = _splitmix64(np.asarray(node_ids).astype(np.uint64) ^ key)
    return (mixed >> np.uint64(11)).astype(np.float64) * 2.0**-53
