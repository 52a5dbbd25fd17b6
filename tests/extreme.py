"""Extreme-magnitude instances shared by the NumPy and torch invariant tests: masses drawn
log-uniformly from 1e-320 to 1 (float64 subnormals included), zeros, V in 2..6, k in 1..3."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

SMALLEST_EXPONENT = -320


@st.composite
def extreme_distributions(draw, size: int) -> np.ndarray:
    """A probability vector whose entries are 0 or ``10**e``, e uniform in [-320, 0], normalised."""
    exponents = draw(st.lists(st.floats(SMALLEST_EXPONENT, 0.0), min_size=size, max_size=size))
    zeros = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    weights = np.where(zeros, 0.0, 10.0 ** np.array(exponents))
    if not weights.sum() > 0:
        weights[draw(st.integers(0, size - 1))] = 1.0
    return weights / weights.sum()


@st.composite
def extreme_instances(draw) -> tuple[np.ndarray, np.ndarray, int]:
    """``(p, q, k)``: V in 2..6, k in 1..3, both vectors from ``extreme_distributions``."""
    size = draw(st.integers(2, 6))
    return draw(extreme_distributions(size)), draw(extreme_distributions(size)), draw(st.integers(1, 3))
