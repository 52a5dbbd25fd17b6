"""One place that validates what users hand to the toolkit.

Every public entry point calls these helpers at its boundary, so a malformed distribution, a bad
candidate count or an impossible candidate is reported with a ``ValueError`` that names the argument
and says what is wrong, instead of producing a silent answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from resispec.limits import MAX_CANDIDATES, MAX_VOCAB, check_limit
from resispec.rows import namespace

SUM_TOLERANCE = 1e-6
"""A float64 distribution may sum to ``1 +- SUM_TOLERANCE``; it is then renormalised to sum to 1."""

FLOAT32_SUM_TOLERANCE = 1e-4
"""A float32 (or float16/bfloat16) distribution may sum to ``1 +- FLOAT32_SUM_TOLERANCE``: a float32
softmax over V = 49152 or 151936 tokens sums to 1 within about 6e-6, past the float64 tolerance, and
the logged-pairs format already allows 1e-4. It is renormalised in float64."""

ROUNDING_SLACK = 1e-14
"""A sum this close to 1 is summation rounding; such a vector is used as given (no copy)."""


def as_distribution(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    """Return ``values`` as a float64 probability vector ``v / sum(v)``.

    Two passes in the common case (sum, min); only a failing check scans for the offending entry.

    Raises ``ValueError`` (naming ``name``) unless ``values`` is a non-empty 1-D array of at most
    ``MAX_VOCAB`` finite, non-negative real numbers (no strings, booleans or complex numbers) whose sum
    is within ``SUM_TOLERANCE`` of 1 (``FLOAT32_SUM_TOLERANCE`` for float32 input).
    """
    array, tolerance = _real_array(values, name)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D probability vector, got shape {array.shape}")
    check_limit(array.size, MAX_VOCAB, name, "the vocabulary size V")
    total = float(array.sum())
    if not np.isfinite(total):
        index = int(np.flatnonzero(~np.isfinite(array))[0])
        raise ValueError(f"{name}: entry {index} is {array[index]} (NaN or inf); probabilities must be finite")
    if array.min() < 0:
        index = int(np.flatnonzero(array < 0)[0])
        raise ValueError(f"{name}: entry {index} is negative ({array[index]:.3g}); probabilities must be >= 0")
    if abs(total - 1.0) > tolerance:
        raise ValueError(
            f"{name}: sums to {total:.12g}, off from 1 by more than the tolerance {tolerance:g}"
        )
    return array if abs(total - 1.0) <= ROUNDING_SLACK else array / total


def _real_array(values: Sequence[float] | np.ndarray, name: str) -> tuple[np.ndarray, float]:
    """``(float64 array, sum tolerance)``; ``ValueError`` for anything but real numbers.

    Strings, booleans and complex numbers are refused rather than coerced (``"0.5"`` and ``True``
    would pass ``np.asarray(..., float64)``; a complex number would silently lose its imaginary part).
    A list is scanned element by element for them; an ndarray is judged by its dtype.
    """
    try:
        raw = np.asarray(values)
        if not isinstance(values, np.ndarray) and raw.dtype.kind in "iuf":
            elements = np.asarray(values, dtype=object).ravel()
            if any(isinstance(v, (bool, np.bool_)) for v in elements):
                raw = np.asarray(values, dtype=bool)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name}: not an array of numbers ({error})") from None
    if raw.dtype.kind not in "iuf":
        raise ValueError(f"{name}: expected real numbers, got dtype {raw.dtype} "
                         "(strings, booleans and complex numbers are refused)")
    low_precision = raw.dtype.kind == "f" and raw.dtype.itemsize < 8
    return raw.astype(np.float64, copy=False), FLOAT32_SUM_TOLERANCE if low_precision else SUM_TOLERANCE


def as_reals(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    """``values`` as float64; ``ValueError`` naming ``name`` for strings, booleans or complex numbers."""
    return _real_array(values, name)[0]


def as_pair(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate the target ``p`` and the draft ``q`` and check they share one vocabulary."""
    p_array = as_distribution(p, "p (target)")
    q_array = as_distribution(q, "q (draft)")
    if p_array.shape != q_array.shape:
        raise ValueError(
            f"p (target) and q (draft) have different vocabulary sizes: {p_array.size} != {q_array.size}"
        )
    return p_array, q_array


def as_count(k: int, name: str = "k", counts: str = "candidates", limit: int | None = None) -> int:
    """Validate a count: an integer ``>= 1``, and at most ``limit`` (default for candidates:
    ``MAX_CANDIDATES``; other counts: no limit unless given)."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"{name}: expected an integer number of {counts}, got {k!r}")
    if k < 1:
        raise ValueError(f"{name}: the number of {counts} must be >= 1, got {k}")
    if limit is None and counts == "candidates":
        limit = MAX_CANDIDATES
    return int(k) if limit is None else check_limit(int(k), limit, name, f"the number of {counts}")


def as_generator(rng: np.random.Generator, name: str = "rng") -> np.random.Generator:
    """Validate a NumPy random generator (``numpy.random.default_rng(seed)``)."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"{name}: expected a numpy.random.Generator (numpy.random.default_rng(seed)), "
                         f"got {type(rng).__name__}")
    return rng


def as_candidates(candidates: Sequence[int] | np.ndarray, vocab_size: int) -> np.ndarray:
    """Validate candidate token ids: a non-empty 1-D integer array with ids in ``[0, vocab_size)``."""
    array = np.asarray(candidates)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"candidates: expected a non-empty 1-D array of token ids, got shape {array.shape}")
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"candidates: token ids must be integers, got dtype {array.dtype}: {array.tolist()}")
    array = array.astype(np.int64)
    out_of_range = (array < 0) | (array >= vocab_size)
    if out_of_range.any():
        index = int(np.flatnonzero(out_of_range)[0])
        raise ValueError(
            f"candidates: id {array[index]} at position {index} is outside the vocabulary [0, {vocab_size})"
        )
    return array


def as_token_set(members: Sequence[int] | np.ndarray, vocab_size: int, name: str = "members") -> np.ndarray:
    """Validate a set of token ids: a 1-D integer array (may be empty) of distinct ids in ``[0, vocab_size)``."""
    array = np.asarray(members)
    if array.ndim != 1 or (array.size and not np.issubdtype(array.dtype, np.integer)):
        raise ValueError(f"{name}: expected a 1-D array of integer token ids, got {array.tolist()!r}")
    array = array.astype(np.int64)
    if array.size and (array.min() < 0 or array.max() >= vocab_size):
        raise ValueError(f"{name}: token ids must lie in [0, {vocab_size}), got {array.tolist()}")
    if np.unique(array).size != array.size:
        raise ValueError(f"{name}: token ids must be distinct, got {array.tolist()}")
    return array


def as_uniforms(u: Sequence[float] | np.ndarray, count: int) -> np.ndarray:
    """Validate the verification uniforms: exactly ``count`` finite numbers in ``[0, 1)``."""
    array, _ = _real_array(u, "u")
    if array.shape != (count,):
        raise ValueError(f"u: expected {count} uniforms (shape ({count},)), got shape {array.shape}")
    bad = ~(np.isfinite(array) & (array >= 0.0) & (array < 1.0))
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        raise ValueError(f"u: uniform {index} is {float(array[index])!r}; every uniform must lie in [0, 1)")
    return array


def raise_for_rows(bad: Any, check_row: Callable[[int], None]) -> None:
    """Run a one-row check on every flagged row (``bad``: bool (B,), NumPy or torch); its ``ValueError``
    gains the row.

    One host sync when no row is flagged. A flagged row that the check accepts (a sum within rounding
    of the tolerance, summed in another order) is accepted.
    """
    if not bool(bad.any()):
        return
    for row in namespace(bad).nonzero(bad)[0].tolist():
        try:
            check_row(row)
        except ValueError as error:
            raise ValueError(f"{error} (batch row {row})") from None


def as_uniform_rows(u: Sequence[Sequence[float]] | np.ndarray, rows: int, count: int) -> np.ndarray:
    """Validate ``rows`` rows of verification uniforms: shape (rows, count), each finite in ``[0, 1)``."""
    array, _ = _real_array(u, "u")
    if array.shape != (rows, count):
        raise ValueError(f"u: expected shape ({rows}, {count}) ({rows} rows of {count} uniforms), got shape "
                         f"{array.shape}")
    bad = ~(np.isfinite(array) & (array >= 0.0) & (array < 1.0)).all(axis=1)
    raise_for_rows(bad, lambda row: as_uniforms(array[row], count))
    return array


def as_distribution_rows(values: Sequence[Sequence[float]] | np.ndarray, name: str) -> np.ndarray:
    """Return ``values`` (shape (N, V)) as float64 rows, each ``v / sum(v)``, checked like ``as_distribution``.

    Vectorised over rows (two passes: row sums, minimum); a failing row is re-checked by
    ``as_distribution`` so the ``ValueError`` names ``name``, the row and the offending entry.
    """
    array, tolerance = _real_array(values, name)
    if array.ndim != 2 or 0 in array.shape:
        raise ValueError(f"{name}: expected a non-empty 2-D array of probability rows (N, V), got shape {array.shape}")
    check_limit(array.shape[1], MAX_VOCAB, name, "the vocabulary size V")
    totals = array.sum(axis=1)
    bad = ~np.isfinite(totals) | (np.abs(totals - 1.0) > tolerance)
    if array.min() < 0:
        bad |= (array < 0).any(axis=1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        as_distribution(np.asarray(values)[row], f"{name} row {row}")
    if (np.abs(totals - 1.0) <= ROUNDING_SLACK).all():
        return array
    return array / totals[:, None]


def as_pair_rows(p: Sequence[Sequence[float]] | np.ndarray,
                 q: Sequence[Sequence[float]] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate N target rows ``p`` and N draft rows ``q`` (shape (N, V) each, one vocabulary)."""
    p_array = as_distribution_rows(p, "p (target)")
    q_array = as_distribution_rows(q, "q (draft)")
    if p_array.shape != q_array.shape:
        raise ValueError(f"p (target) and q (draft) rows have different shapes: {p_array.shape} != {q_array.shape}")
    return p_array, q_array
