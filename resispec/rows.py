"""Row operations for rules written once over the array API standard (NumPy or torch, CPU or GPU).

A rule works on rows: ``p``, ``q`` of shape (B, V), candidates (B,) or (B, k). ``namespace`` gives the
array API namespace of its inputs (``array_api_compat``: NumPy without torch installed, torch's tensors
on any device). The standard has ``take_along_axis`` but no scatter, and its ``searchsorted`` is
one-dimensional; the helpers below are the one backend-specific piece each.
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from types import ModuleType
from typing import Any

import numpy as np
from array_api_compat import array_namespace, is_torch_array
from array_api_compat import device as device_of
from array_api_compat import numpy as numpy_namespace

Array = Any
"""An array of the array API standard (``numpy.ndarray`` or ``torch.Tensor``)."""


CPU_CHUNK_ELEMENTS = 1 << 17
"""On the CPU a plan's many passes over (B, V) arrays are made for about this many entries at a time, so
that they run in cache (B = 64, V = 49152 two rows at a time: 2 to 4 times faster than all rows at once)."""


def rows_per_chunk(x: Array) -> int:
    """How many rows of ``x`` (B, V) a plan processes at a time: ``max(1, CPU_CHUNK_ELEMENTS // V)`` on the
    CPU, all B elsewhere."""
    on_cpu = not is_torch_array(x) or x.device.type == "cpu"
    return max(1, CPU_CHUNK_ELEMENTS // x.shape[-1]) if on_cpu else x.shape[0]


def namespace(*arrays: Array) -> ModuleType:
    """The array API namespace of ``arrays`` (python scalars and None are ignored); NumPy arrays take a
    shortcut (``array_namespace`` costs microseconds, and a rule at B = 1 asks it dozens of times)."""
    if all(type(array) is np.ndarray for array in arrays):
        return numpy_namespace
    return array_namespace(*arrays)


def float_errors_allowed(x: Array) -> AbstractContextManager:
    """A context in which inf and NaN from a division are intended (the caller masks them): silences
    NumPy's warnings (torch has none)."""
    return contextlib.nullcontext() if is_torch_array(x) else np.errstate(divide="ignore", over="ignore",
                                                                          invalid="ignore")


def gather_rows(x: Array, index: Array) -> Array:
    """``x[..., index[..., j]]`` along the last axis (the standard's ``take_along_axis``, which
    array-api-compat implements for torch about four times slower than ``torch.gather``)."""
    if type(x) is np.ndarray:
        if x.ndim == 1 or x.shape[0] == 1:  # one row (the single-instance API): plain indexing is faster
            return x[index] if x.ndim == 1 else x[0][index]
        return np.take_along_axis(x, index, axis=-1)
    if is_torch_array(x):
        return x.gather(-1, index)
    return namespace(x).take_along_axis(x, index, axis=-1)


def value_at(x: Array, index: Array | int) -> Array:
    """``x[b, index[b]]`` for every row b: ``x`` (B, V), ``index`` (B,) integer -> (B,); also one row
    ``x`` (V,) with one index -> a 0-d array."""
    if type(x) is np.ndarray and x.ndim == 2 and x.shape[0] == 1 and type(index) is np.ndarray:
        return x[0][index]  # one row (the single-instance API): plain indexing
    return gather_rows(x, namespace(x).asarray(index)[..., None])[..., 0]


def zero_at_(x: Array, index: Array) -> Array:
    """Set ``x[b, index[b]] = 0`` in place for every row b (a scatter, which the standard lacks); returns x."""
    if is_torch_array(x):
        return x.scatter_(1, index[:, None], 0.0)
    x[np.arange(x.shape[0]), index] = 0.0
    return x


def add_at_(x: Array, index: Array, values: Array) -> Array:
    """``x[b, index[b, j]] += values[b, j]`` in place (a scatter-add, which the standard lacks); each row of
    ``index`` (B, m) holds distinct ids. Returns x."""
    if is_torch_array(x):
        return x.scatter_add_(1, index, values)
    x[np.arange(x.shape[0])[:, None], index] += values
    return x


def placed_rows(values: Array, rows: Array, batch: int, fill: float) -> Array:
    """``values`` (B', ...) of the rows ``rows`` (integer (B',), distinct) placed in a (batch, ...) array,
    ``fill`` elsewhere (a scatter of rows, which the standard lacks)."""
    xp = namespace(values)
    placed = xp.full((batch, *values.shape[1:]), fill, dtype=values.dtype, device=device_of(values))
    if is_torch_array(placed):
        return placed.index_copy_(0, rows, values)
    placed[rows] = values
    return placed


def set_at_(x: Array, rows: Array, index: Array, values: Array) -> Array:
    """``x[rows[m], index[m]] = values[m]`` in place (a scatter, which the standard lacks); returns x."""
    if is_torch_array(x):
        return x.index_put_((rows, index), values)
    x[rows, index] = values
    return x


def positive_part_(x: Array) -> Array:
    """``max(x, 0)`` in place (the standard's ``clip`` allocates; this runs on every rejection step)."""
    if is_torch_array(x):
        return x.clamp_(min=0.0)
    return np.maximum(x, 0.0, out=x)


def ordered_prefix_sums(values: Array, order: Array) -> Array:
    """``[0, v_o1, v_o1 + v_o2, ...]`` per row of ``values`` (B, V) in ``order`` (B, V): (B, V + 1), summed
    sequentially, into one preallocated array (``cumulative_sum(include_initial=True)`` copies twice)."""
    if type(values) is np.ndarray:
        prefix = np.empty((values.shape[0], values.shape[1] + 1))
        prefix[:, 0] = 0.0
        if values.shape[0] == 1:  # one row: gathered straight into place ("clip": no buffered copy, ids valid)
            np.take(values[0], order[0], out=prefix[0, 1:], mode="clip")
        else:
            prefix[:, 1:] = np.take_along_axis(values, order, axis=-1)
        np.cumsum(prefix[:, 1:], axis=1, out=prefix[:, 1:])
        return prefix
    xp = namespace(values)
    prefix = xp.zeros((values.shape[0], values.shape[1] + 1), dtype=values.dtype, device=device_of(values))
    if is_torch_array(values):
        import torch

        torch.gather(values, 1, order, out=prefix[:, 1:])
        return prefix.cumsum_(dim=-1)
    prefix[:, 1:] = gather_rows(values, order)
    return xp.cumulative_sum(prefix, axis=1)


COMPARE_BUDGET = 1 << 22
"""Most comparisons (B m V) for which ``searchsorted_rows`` counts by broadcasting instead of looping."""


def searchsorted_rows(sorted_rows: Array, values: Array, side: str = "right") -> Array:
    """Per row, the number of entries of ``sorted_rows[b]`` (ascending) that are ``<= values[b, j]``
    (``side="left"``: ``< values[b, j]``).

    ``sorted_rows`` (B, V), ``values`` (B, m) -> (B, m) integer: ``searchsorted`` row by row (the standard's
    ``searchsorted`` takes one row; torch's takes a batch; NumPy's is looped over rows, or, for many short
    rows, replaced by counting the entries ``<=`` (``<``) each value).
    """
    if is_torch_array(sorted_rows):
        import torch

        return torch.searchsorted(sorted_rows, values, right=side == "right")
    if sorted_rows.shape[0] == 1:
        return np.searchsorted(sorted_rows[0], values[0], side=side)[None]
    if sorted_rows.shape[1] <= COUNT_UP_TO and sorted_rows.size * values.shape[1] <= COMPARE_BUDGET:
        below = sorted_rows[:, None, :] <= values[:, :, None] if side == "right" else (
            sorted_rows[:, None, :] < values[:, :, None])
        return np.count_nonzero(below, axis=-1)  # many short rows: count, no Python loop
    if values.shape[1] * LOCKSTEP_ROWS_PER_VALUE >= sorted_rows.shape[0]:  # few rows: NumPy's own search each
        return np.stack([np.searchsorted(row, point, side=side) for row, point in zip(sorted_rows, values)])
    return _bisected_rows(sorted_rows, values, side)


COUNT_UP_TO = 64
"""Longest rows that ``searchsorted_rows`` counts through by broadcasting (O(V) per value, one pass)."""

LOCKSTEP_ROWS_PER_VALUE = 8
"""``searchsorted_rows`` on NumPy bisects all rows in lockstep when there are more than this many rows per
value searched; fewer rows go through NumPy's own ``searchsorted`` one row at a time."""


def _bisected_rows(sorted_rows: np.ndarray, values: np.ndarray, side: str) -> np.ndarray:
    """``searchsorted`` of every row at once on NumPy: a lockstep bisection of ``V.bit_length()`` rounds over
    all (B, m) points (a few vector operations per round instead of B Python-level calls)."""
    vocab = sorted_rows.shape[1]
    lo, hi = np.zeros(values.shape, dtype=np.int64), np.full(values.shape, vocab, dtype=np.int64)
    for _ in range(vocab.bit_length()):
        middle = (lo + hi) >> 1
        entry = np.take_along_axis(sorted_rows, np.minimum(middle, vocab - 1), axis=1)
        right = (entry <= values if side == "right" else entry < values) & (lo < hi)
        lo = np.where(right, middle + 1, lo)
        hi = np.where(right | (lo >= hi), hi, middle)
    return lo


def row_values(x: Array) -> ArrayRowValues | ScalarRowValues:
    """How a plan holds one value per row of ``x`` (B, ...): a (B,) array (``ArrayRowValues``), or, for one
    NumPy row (the single-instance API), a NumPy scalar (``ScalarRowValues``).

    An iterative plan (resispec's Newton steps, resispec_wor's bisection) makes dozens of operations on
    such values per step; on a NumPy array of one element each costs about a microsecond, on a NumPy
    float64 scalar a tenth of that, with the same IEEE result. Both classes offer the same operations.
    """
    return SCALAR_ROW_VALUES if type(x) is np.ndarray and x.shape[0] == 1 else ArrayRowValues(x)


class ArrayRowValues:
    """Per-row values as (B,) arrays on the device of ``like`` (B, ...)."""

    def __init__(self, like: Array) -> None:
        self.xp, self.like = namespace(like), like

    def full(self, value: bool | float) -> Array:
        """``value`` in every row (bool or float64)."""
        dtype = self.xp.bool if isinstance(value, bool) else self.xp.float64
        return self.xp.full((self.like.shape[0],), value, dtype=dtype, device=device_of(self.like))

    def column(self, x: Array, j: int) -> Array:
        """Column j of ``x`` (B, n)."""
        return x[:, j]

    def stack(self, columns: list[Array]) -> Array:
        """The per-row values ``columns`` side by side, (B, n)."""
        return self.xp.stack(columns, axis=1)

    def at(self, x: Array, index: Array) -> Array:
        """``x[b, index[b]]`` (``value_at``)."""
        return value_at(x, index)

    def search(self, sorted_rows: Array, value: Array, side: str = "right") -> Array:
        """``searchsorted_rows`` of one value per row."""
        return searchsorted_rows(sorted_rows, value[:, None], side)[:, 0]

    def maximum(self, a: Array, b: Array | float) -> Array:
        return self.xp.maximum(a, b)

    def minimum(self, a: Array, b: Array | float) -> Array:
        return self.xp.minimum(a, b)

    def where(self, condition: Array, a: Any, b: Any) -> Any:
        """``a`` in the rows where ``condition`` holds, ``b`` elsewhere (per-row values or (B, n) arrays)."""
        return self.xp.where(condition if getattr(a, "ndim", 1) < 2 else condition[:, None], a, b)

    def isnan(self, a: Array) -> Array:
        return self.xp.isnan(a)

    def isfinite(self, a: Array) -> Array:
        return self.xp.isfinite(a)

    def logical_not(self, a: Array) -> Array:
        return ~a

    def any(self, a: Array) -> bool:
        """Whether any row holds ``a`` (a host sync on a device)."""
        return bool(self.xp.any(a))

    def next_up(self, a: Array) -> Array:
        """The next float64 above ``a``."""
        return self.xp.nextafter(a, self.xp.full_like(a, self.xp.inf))


class ScalarRowValues:
    """Per-row values of one NumPy row as NumPy scalars (float64, intp, bool): the operations of
    ``ArrayRowValues`` with the same IEEE results (NaN propagates through ``maximum`` and ``minimum``)."""

    def full(self, value: bool | float) -> Any:
        return value if isinstance(value, bool) else np.float64(value)

    def column(self, x: Array, j: int) -> Any:
        return x[0, j]

    def stack(self, columns: list[Any]) -> Array:
        return np.array([columns])

    def at(self, x: Array, index: Any) -> Any:
        return x[0, index]

    def search(self, sorted_rows: Array, value: Any, side: str = "right") -> Any:
        return sorted_rows[0].searchsorted(value, side=side)

    def maximum(self, a: Any, b: Any) -> Any:
        return a if a >= b or a != a else b

    def minimum(self, a: Any, b: Any) -> Any:
        return a if a <= b or a != a else b

    def where(self, condition: bool, a: Any, b: Any) -> Any:
        return a if condition else b

    def isnan(self, a: Any) -> bool:
        return bool(a != a)

    def isfinite(self, a: Any) -> bool:
        return bool(-np.inf < a < np.inf)

    def logical_not(self, a: bool) -> bool:
        return not a

    def any(self, a: bool) -> bool:
        return bool(a)

    def next_up(self, a: Any) -> Any:
        return np.nextafter(a, np.inf)


SCALAR_ROW_VALUES = ScalarRowValues()
