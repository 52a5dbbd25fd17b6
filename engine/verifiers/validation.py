"""Batched input checks for the torch verifiers: the tensor form of ``resispec.validation``.

A batch holds B nodes: probabilities ``(B, V)``, candidates ``(B, k)``, uniforms ``(B, k + 1)``.
Every check runs vectorised on the inputs' device and costs one host sync in the common (valid)
case. A row that fails is handed to the NumPy validator of the same name, so the ``ValueError``
names the argument and carries the NumPy message and tolerances (``SUM_TOLERANCE``,
``ROUNDING_SLACK``) word for word, followed by the offending batch row.
"""

from __future__ import annotations

import torch

from resispec.validation import (
    FLOAT32_SUM_TOLERANCE,
    ROUNDING_SLACK,
    SUM_TOLERANCE,
    as_distribution,
    as_uniforms,
    raise_for_rows,
)


def _tensor(values: object, name: str, ndim: int, shape_text: str) -> torch.Tensor:
    """``values`` if it is a non-empty tensor with ``ndim`` dimensions, else ``ValueError``."""
    if not isinstance(values, torch.Tensor):
        raise ValueError(f"{name}: expected a torch.Tensor of shape {shape_text}, got {type(values).__name__}")
    if values.ndim != ndim or values.numel() == 0:
        raise ValueError(f"{name}: expected a non-empty tensor of shape {shape_text}, got shape {tuple(values.shape)}")
    return values


def same_device(values: torch.Tensor, name: str, device: torch.device) -> None:
    """``ValueError`` unless ``values`` lives on ``device`` (the device of the target p)."""
    if values.device != device:
        raise ValueError(f"{name}: on device {values.device}, but p (target) is on {device}")


def as_distributions(values: torch.Tensor, name: str) -> torch.Tensor:
    """Rows of ``values`` (shape (B, V), any floating dtype) as float64 probability vectors ``v / sum(v)``.

    Each row must be finite, non-negative and sum to ``1 +- SUM_TOLERANCE`` (``FLOAT32_SUM_TOLERANCE``
    for float32, float16 and bfloat16 input, as in NumPy); rows whose sum is off
    from 1 by more than ``ROUNDING_SLACK`` are renormalised, as ``resispec.validation.as_distribution``
    does (on CPU by NumPy's own row sums, so the renormalised rows are NumPy's bit for bit).
    """
    values = _tensor(values, name, 2, "(B, V)")
    if not values.is_floating_point():
        raise ValueError(f"{name}: expected floating-point probabilities, got dtype {values.dtype}")
    low_precision = values.dtype.itemsize < 8
    tolerance = FLOAT32_SUM_TOLERANCE if low_precision else SUM_TOLERANCE
    array = values.to(torch.float64)
    total = row_sums(array)
    off = (total - 1.0).abs()
    bad = ~((array.amin(dim=-1) >= 0) & (off <= tolerance)[:, 0])  # NaN fails both comparisons
    checked = values.to(torch.float32) if low_precision else array  # NumPy then applies the same tolerance
    raise_for_rows(bad, lambda row: as_distribution(checked[row].cpu().numpy(), name))
    return _renormalized(array, total)


def renormalized(array: torch.Tensor) -> torch.Tensor:
    """What `as_distributions` returns for float64 (B, V) rows it accepts, without its checks: rows off from 1
    by more than ``ROUNDING_SLACK`` divided by their (NumPy) sums, the others unchanged. For rows the engine
    made itself (processed softmax rows, valid by construction: the decoding loop's trusted path)."""
    return _renormalized(array, row_sums(array))


def _renormalized(array: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
    off = (total - 1.0).abs() > ROUNDING_SLACK
    if not bool(off.any()):  # the common case: no row to divide (x / 1 would be x)
        return array
    return array / torch.where(off, total, 1.0)


def row_sums(array: torch.Tensor) -> torch.Tensor:
    """Row sums (B, 1) of a float64 (B, V) batch. On CPU NumPy's pairwise sums, which are the sums
    ``resispec.validation`` (and any NumPy ``x.sum()`` of a row) computes (torch sums in another order,
    which differs by an ulp in about one row in ten): pooled's ranks reorder at ratio ties, and
    resispec_wor's fixed point can be steep, so an ulp there can move a decision."""
    if array.device.type == "cpu":
        return torch.from_numpy(array.detach().contiguous().numpy().sum(axis=-1, keepdims=True))
    return array.sum(dim=-1, keepdim=True)


def as_pair(p: torch.Tensor, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate the target ``p`` and the draft ``q`` (both (B, V), one device) as float64 batches."""
    p64 = as_distributions(p, "p (target)")
    same_device(q, "q (draft)", p64.device)
    q64 = as_distributions(q, "q (draft)")
    if p64.shape != q64.shape:
        raise ValueError(
            f"p (target) and q (draft) have different shapes (B, V): {tuple(p64.shape)} != {tuple(q64.shape)}"
        )
    return p64, q64


def as_candidate_batch(candidates: torch.Tensor, batch: int, vocab_size: int) -> torch.Tensor:
    """Candidate ids, shape (B, k), any integer dtype, as int64; the range check is the scheme's."""
    candidates = _tensor(candidates, "candidates", 2, "(B, k)")
    if candidates.shape[0] != batch:
        raise ValueError(f"candidates: expected {batch} rows (one per node), got shape {tuple(candidates.shape)}")
    if candidates.is_floating_point() or candidates.is_complex() or candidates.dtype == torch.bool:
        raise ValueError(f"candidates: token ids must be integers, got dtype {candidates.dtype}")
    return candidates.long()


def as_uniform_batch(u: torch.Tensor, batch: int, count: int) -> torch.Tensor:
    """The verification uniforms: float64, shape (B, count), every entry finite in ``[0, 1)``."""
    u = _tensor(u, "u", 2, f"(B, {count})")
    if tuple(u.shape) != (batch, count):
        raise ValueError(f"u: expected shape ({batch}, {count}) (B nodes, {count} uniforms each), got {tuple(u.shape)}")
    if u.dtype != torch.float64:
        raise ValueError(f"u: expected float64 uniforms (parity with the NumPy reference), got dtype {u.dtype}")
    bad = ~((u >= 0.0) & (u < 1.0)).all(dim=-1)
    raise_for_rows(bad, lambda row: as_uniforms(u[row].cpu().numpy(), count))
    return u
