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
    x[np.arange(x.shape[0])[:, None], index] = values
    return x


def add_at_(x: Array, index: Array, values: Array) -> Array:
    """``x[b, index[b, j]] += values[b, j]`` in place (a scatter-add, which the standard lacks); each row of
    ``index`` (B, m) holds distinct ids. Returns x."""
    if is_torch_array(x):
        return x.scatter_add_(1, index, values)
    x[np.arange(x.shape[0])[:, None], index] += values
    return x


def positive_part_(x: Array) -> Array:
    """``max(x, 0)`` in place (the standard's ``clip`` allocates; this runs on every rejection step)."""
    if is_torch_array(x):
        return x.clamp_(min=0.0)
    return np.maximum(x, 0.0, out=x)


def ordered_prefix_sums(values: Array, order: Array) -> Array:
    """``[0, v_o1, v_o1 + v_o2, ...]`` per row of ``values`` (B, V) in ``order`` (B, V): (B, V + 1), summed
    sequentially, into one preallocated array (``cumulative_sum(include_initial=True)`` copies twice)."""
    xp = namespace(values)
    prefix = xp.zeros((values.shape[0], values.shape[1] + 1), dtype=values.dtype, device=device_of(values))
    if is_torch_array(values):
        import torch

        torch.gather(values, 1, order, out=prefix[:, 1:])
        return prefix.cumsum_(dim=-1)
    prefix[:, 1:] = gather_rows(values, order)
    np.cumsum(prefix[:, 1:], axis=1, out=prefix[:, 1:])
    return prefix


def searchsorted_rows(sorted_rows: Array, values: Array) -> Array:
    """Per row, the number of entries of ``sorted_rows[b]`` (ascending) that are ``<= values[b, j]``.

    ``sorted_rows`` (B, V), ``values`` (B, m) -> (B, m) integer: ``searchsorted(..., side="right")`` row by
    row (the standard's ``searchsorted`` takes one row; torch's takes a batch, NumPy's is looped).
    """
    if is_torch_array(sorted_rows):
        import torch

        return torch.searchsorted(sorted_rows.contiguous(), values.contiguous(), right=True)  # no-ops if they are
    if sorted_rows.shape[0] == 1:
        return np.searchsorted(sorted_rows[0], values[0], side="right")[None]
    return np.stack([np.searchsorted(row, point, side="right") for row, point in zip(sorted_rows, values)])
