"""Hypothesis strategies for (p, q, k) instances, corner cases included on purpose."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

KINDS = ("random", "random", "random", "equal", "one-hot-p", "zeros", "tiny", "disjoint", "ties")


@st.composite
def distributions(draw, size: int, allow_zeros: bool = True) -> np.ndarray:
    """A probability vector of the given size with at least one positive entry."""
    low = 0.0 if allow_zeros else 1e-3
    weights = np.array(draw(st.lists(st.floats(low, 1.0), min_size=size, max_size=size)))
    if weights.sum() <= 0:
        weights[draw(st.integers(0, size - 1))] = 1.0
    return weights / weights.sum()


@st.composite
def instances(draw, min_v: int = 2, max_v: int = 7, max_k: int = 4) -> tuple[np.ndarray, np.ndarray, int]:
    """``(p, q, k)`` over V in [min_v, max_v] and k in [1, max_k], with deliberate corner cases:
    p == q, one-hot p, zeros in p and q, masses down to 1e-12, disjoint supports, ratio ties."""
    size = draw(st.integers(min_v, max_v))
    kind = draw(st.sampled_from(KINDS))
    k = draw(st.integers(1, max_k))
    p = draw(distributions(size))
    q = draw(distributions(size))
    if kind == "equal":
        q = p.copy()
    elif kind == "one-hot-p":
        p = np.eye(size)[draw(st.integers(0, size - 1))]
    elif kind == "tiny":
        scale = np.where(np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size))), 1e-12, 1.0)
        p, q = p * scale, q * scale[::-1]
        p, q = (p if p.sum() > 0 else np.ones(size)) , (q if q.sum() > 0 else np.ones(size))
        p, q = p / p.sum(), q / q.sum()
    elif kind == "disjoint":
        cut = draw(st.integers(1, size - 1))
        p = np.concatenate([p[:cut] + 1e-3, np.zeros(size - cut)])
        q = np.concatenate([np.zeros(cut), q[cut:] + 1e-3])
        p, q = p / p.sum(), q / q.sum()
    elif kind == "ties":
        q = np.roll(p, 1) * 0.5 + p * 0.5
    return p, q, k
