"""Pair batches: rows are validated at the boundary, errors name the argument and the row."""

from __future__ import annotations

import numpy as np
import pytest

from resispec.sim.batch import PairBatch
from resispec.validation import as_distribution_rows


def test_rows_are_renormalised_within_tolerance_and_kept_when_exact():
    rows = np.array([[0.5, 0.5], [0.25, 0.75]])
    assert as_distribution_rows(rows, "p") is rows
    nudged = as_distribution_rows(rows * (1 + 1e-8), "p")
    assert np.allclose(nudged.sum(axis=1), 1.0, atol=1e-15)


@pytest.mark.parametrize("p, message", [
    ([[0.5, 0.5], [1.2, -0.2]], "p \\(target\\) row 1: entry 1 is negative"),
    ([[0.5, 0.5], [np.nan, 1.0]], "p \\(target\\) row 1: entry 0 is nan"),
    ([[0.5, 0.5], [0.5, 0.6]], "p \\(target\\) row 1: sums to 1.1"),
    ([0.5, 0.5], "p \\(target\\): expected a non-empty 2-D array"),
    ([["a", "b"]], "p \\(target\\): expected real numbers"),
])
def test_bad_rows_are_named(p, message):
    with pytest.raises(ValueError, match=message):
        PairBatch.from_arrays(p, [[0.5, 0.5], [0.5, 0.5]][: np.ndim(p)])


def test_shapes_and_ids_are_checked():
    half = np.full((2, 2), 0.5)
    with pytest.raises(ValueError, match="different shapes"):
        PairBatch.from_arrays(half, np.full((2, 4), 0.25))
    with pytest.raises(ValueError, match="chain: expected 2 integer ids"):
        PairBatch.from_arrays(half, half, chain=np.array([0.0, 1.0]), position=np.array([0, 1]))
    batch = PairBatch.from_arrays(half, half, source="toy")
    assert len(batch) == 2 and batch.vocab_size == 2 and batch.chain.tolist() == [0, 1]
    assert len(batch.head(1)) == 1 and len(batch.head(5)) == 2
