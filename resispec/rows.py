"""Row operations for rules written once over the array API standard (NumPy or torch, CPU or GPU).

A rule works on rows: ``p``, ``q`` of shape (B, V), candidates (B,) or (B, k). ``namespace`` gives the
array API namespace of its inputs (``array_api_compat``: NumPy without torch installed, torch's tensors
on any device). The standard has ``take_along_axis`` but no scatter, and its ``searchsorted`` is
one-dimensional; the helpers below are the one backend-specific piece each.
"""

from __future__ import annotations

import contextlib
import functools
from contextlib import AbstractContextManager
from types import ModuleType
from typing import Any

import numpy as np
from array_api_compat import array_namespace, is_torch_array
from array_api_compat import device as _array_device

Array = Any
"""An array of the array API standard (``numpy.ndarray`` or ``torch.Tensor``)."""


CPU_CHUNK_ELEMENTS = 1 << 17
"""On the CPU a plan of many passes over (B, V) arrays is built for about this many entries at a time, so
that its passes run in cache (pooled's plan at B = 64, V = 49152, two rows at a time: 3 to 4 times
faster than all rows at once on a shared 2-core EPYC)."""


def cpu_chunk_rows(x: Array) -> int:
    """How many rows of ``x`` (B, V) such a plan takes at a time: ``max(1, CPU_CHUNK_ELEMENTS // V)`` on the
    CPU (NumPy, or torch on the CPU), every row on other devices."""
    if is_torch_array(x) and x.device.type != "cpu":
        return max(x.shape[0], 1)
    return max(1, CPU_CHUNK_ELEMENTS // x.shape[1])


def device_of(x: Array) -> Any:
    """The device of ``x`` (the standard's ``device``; "cpu" for a NumPy array, without array-api-compat's checks)."""
    return "cpu" if type(x) is np.ndarray else _array_device(x)


def _without_device(function: Any) -> Any:
    """``function`` with the standard's ``device`` keyword accepted and dropped (NumPy arrays live on the CPU)."""
    def call(*args: Any, device: Any = None, **kwargs: Any) -> Any:
        return function(*args, **kwargs)
    return call


def _numpy_sort(function: Any, compat: ModuleType) -> Any:
    """NumPy's (arg)sort with the standard's keywords; ascending only (descending goes to array-api-compat)."""
    def call(x: Array, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
        if descending:
            return getattr(compat, function.__name__)(x, axis=axis, descending=True, stable=stable)
        return function(x, axis=axis, kind="stable" if stable else None)
    return call


@functools.cache
def numpy_shortcuts() -> ModuleType:
    """array-api-compat's NumPy namespace, with the functions the rules call most replaced by NumPy's own (the
    same results, without its wrappers' cost). Built on first use: importing ``array_api_compat.numpy`` takes
    0.15-0.2 s (it walks NumPy's lazily loaded submodules, ``numpy.f2py`` and ``numpy.testing`` among them),
    which a command that never hands a rule NumPy rows, ``resispec generate``, does not pay."""
    from array_api_compat import numpy as numpy_namespace

    shortcuts = ModuleType("resispec.rows.numpy_shortcuts", numpy_shortcuts.__doc__)
    shortcuts.__dict__.update({name: value for name, value in vars(numpy_namespace).items()
                               if not name.startswith("__")})
    shortcuts.__dict__.update(
        where=np.where, maximum=np.maximum, minimum=np.minimum, concat=np.concatenate,
        flip=lambda x, /, *, axis=None: np.flip(x) if axis is None else x[(slice(None),) * (axis % x.ndim) + (
            slice(None, None, -1),)],
        broadcast_to=np.broadcast_to,
        # reductions by the array's own methods (NumPy's functions add a Python wrapper)
        sum=lambda x, /, *, axis=None, dtype=None, keepdims=False: x.sum(axis=axis, dtype=dtype, keepdims=keepdims),
        prod=lambda x, /, *, axis=None, dtype=None, keepdims=False: x.prod(axis=axis, dtype=dtype, keepdims=keepdims),
        max=lambda x, /, *, axis=None, keepdims=False: x.max(axis=axis, keepdims=keepdims),
        min=lambda x, /, *, axis=None, keepdims=False: x.min(axis=axis, keepdims=keepdims),
        all=lambda x, /, *, axis=None, keepdims=False: x.all(axis=axis, keepdims=keepdims),
        any=lambda x, /, *, axis=None, keepdims=False: x.any(axis=axis, keepdims=keepdims),
        argmax=lambda x, /, *, axis=None, keepdims=False: x.argmax(axis=axis, keepdims=keepdims),
        argmin=lambda x, /, *, axis=None, keepdims=False: x.argmin(axis=axis, keepdims=keepdims),
        cumulative_sum=lambda x, /, *, axis=None, dtype=None, include_initial=False: (
            numpy_namespace.cumulative_sum(x, axis=axis, dtype=dtype, include_initial=True) if include_initial
            else x.cumsum(axis=axis, dtype=dtype)),
        astype=lambda x, dtype, /, *, copy=True, device=None: x.astype(dtype, copy=copy),
        sort=_numpy_sort(np.sort, numpy_namespace), argsort=_numpy_sort(np.argsort, numpy_namespace),
        arange=_without_device(np.arange), zeros=_without_device(np.zeros), ones=_without_device(np.ones),
        empty=_without_device(np.empty), full=_without_device(np.full), eye=_without_device(np.eye),
        zeros_like=_without_device(np.zeros_like), ones_like=_without_device(np.ones_like),
        empty_like=_without_device(np.empty_like), asarray=_without_device(np.asarray),
    )
    return shortcuts


def namespace(*arrays: Array) -> ModuleType:
    """The array API namespace of ``arrays`` (python scalars and None are ignored). NumPy arrays take a
    shortcut: array-api-compat's NumPy namespace with the functions the rules call most replaced by NumPy's
    own (``array_namespace`` and array-api-compat's wrappers cost microseconds per call, and a rule at
    B = 1 makes a hundred calls)."""
    if all(type(array) is np.ndarray for array in arrays):
        return numpy_shortcuts()
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
    if type(x) is np.ndarray and x.ndim == 2:
        if x.shape[0] == 1 and type(index) is np.ndarray:
            return x[0][index]  # one row (the single-instance API): plain indexing
        return x[np.arange(x.shape[0]), index]
    return gather_rows(x, namespace(x).asarray(index)[..., None])[..., 0]


def zero_at_(x: Array, index: Array) -> Array:
    """Set ``x[b, index[b]] = 0`` in place for every row b (a scatter, which the standard lacks); returns x."""
    if is_torch_array(x):
        return x.scatter_(1, index[:, None], 0.0)
    x[np.arange(x.shape[0]), index] = 0.0
    return x


def set_at_(x: Array, index: Array, values: Array) -> Array:
    """``x[b, index[b, j]] = values[b, j]`` in place (a scatter, which the standard lacks); ``values`` may be
    broadcast to ``index``'s shape (B, m). Where a row repeats an id, one of its values lands (callers
    send only what they discard to a repeated id). Returns x."""
    if is_torch_array(x):
        return x.scatter_(1, index, values.expand(index.shape) if values.shape != index.shape else values)
    if x.shape[0] == 1:  # one row (the single-instance API): plain indexing is faster
        x[0, index[0]] = values[0] if values.ndim == 2 else values
        return x
    x[np.arange(x.shape[0])[:, None], index] = values
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


def set_pairs_(x: Array, rows: Array, index: Array, values: Array) -> Array:
    """``x[rows[m], index[m]] = values[m]`` in place for listed (row, id) pairs (a scatter, which the standard
    lacks); returns x."""
    if is_torch_array(x):
        return x.index_put_((rows, index), values)
    x[rows, index] = values
    return x


def count_rows(index: Array, size: int) -> Array:
    """Per row of ``index`` (B, m) integer, how often each id in ``[0, size)`` occurs (B, size); ids past
    ``size`` are not counted (a row-wise ``bincount``, which the standard lacks)."""
    if is_torch_array(index):
        import torch

        counts = torch.zeros((index.shape[0], size + 1), dtype=index.dtype, device=index.device)
        return counts.scatter_add_(1, index.clamp(max=size), torch.ones_like(index))[:, :size]
    if index.shape[0] == 1:
        return np.bincount(np.minimum(index[0], size), minlength=size + 1)[None, :size]
    rows, width = index.shape[0], size + 1
    flat = (np.minimum(index, size) + width * np.arange(rows)[:, None]).ravel()
    return np.bincount(flat, minlength=rows * width).reshape(rows, width)[:, :size]


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

        # contiguous(): no-ops when they already are
        return torch.searchsorted(sorted_rows.contiguous(), values.contiguous(), right=side == "right")
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


def stable_sort_rows(x: Array) -> tuple[Array, Array]:
    """``(sorted rows, order)`` of ``x`` (B, n): each row ascending, equal values in their original order
    (the standard has ``sort`` and ``argsort`` but no sort that returns both). On the CPU (NumPy, or torch
    on the CPU) NumPy's stable sort, which merges already sorted runs in linear time (faster than
    ``torch.sort`` on the pools' levels); on other devices ``torch.sort``."""
    if is_torch_array(x) and x.device.type != "cpu":
        import torch

        return torch.sort(x, dim=-1, stable=True)
    rows = x if type(x) is np.ndarray else x.numpy()  # on the CPU NumPy's stable sort merges sorted runs
    order = np.argsort(rows, axis=-1, kind="stable")
    ordered = rows[0][order[0]][None] if rows.shape[0] == 1 else np.take_along_axis(rows, order, axis=-1)
    if type(x) is np.ndarray:
        return ordered, order
    import torch

    return torch.from_numpy(ordered), torch.from_numpy(order)


BLOCK_BIT = 62
"""``block_keys`` adds ``2^62`` in the second block: the bit patterns of float64 values in [0, 2) stay below it."""


def block_keys(x: Array, second: Array) -> Array:
    """int64 sort keys of float64 ``x`` in [+0, 2) in two blocks: the keys order the first block's values
    ascending, then the second block's (``second``, bool, broadcast to x), exactly (the bit pattern of a
    non-negative float64, read as an integer, orders as the float does). ``block_levels`` inverts it."""
    if is_torch_array(x):
        import torch

        return x.view(torch.int64) + (second.to(torch.int64) << BLOCK_BIT)
    return x.view(np.int64) + (second.astype(np.int64) << BLOCK_BIT)


def block_levels(keys: Array) -> Array:
    """The float64 values of ``block_keys``' keys."""
    if is_torch_array(keys):
        import torch

        return (keys & ~(1 << BLOCK_BIT)).view(torch.float64)
    return (keys & ~(1 << BLOCK_BIT)).view(np.float64)
