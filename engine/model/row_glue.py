"""The element-wise work between an integer-kernel forward's products, one compiled call per step.

In a one-row forward of the native target the 121 integer products take ~21 ms and everything between them
~5 ms: some 25 small torch calls a layer (norm, casts, rotary, cache writes, views, residual adds, SiLU), each
a few microseconds of dispatch for a few hundred numbers. These numba kernels do each stretch between two
products in one call, row by row (so a row's result never depends on the other rows of the forward):

    `add_norm_rows`:    h <- h + f32(delta);  x = bf16(w * h / sqrt(mean(h^2) + eps))    (residual, next norm)
                        (`add_norm_rows_f32`: the same, x in float32 for a float32 head)
    `rotate_store_rows`: from [Q | K | V] (bf16 [rows, (H + 2 H_kv) d]): q = rope(Q) (float32 [H, rows, d]),
                        keys[:, start + r] = rope(K_r), values[:, start + r] = V_r (float32 cache)
    `heads_to_rows`:    x[r, h d + i] = bf16(attended[h, r, i])                          (into W_o's input)
    `swiglu_rows`:      x = bf16(bf16(silu(G)) U) of [G | U] (bf16 [rows, 2 F])          (into W_down's input)

with ``rope(x) = x cos + roll(x, d / 2) sin_signed`` (`resispec.engine.runtime.compact_lm.rotate`, the same float32
operations in the same order, no fused multiply-add) and ``bf16`` round-to-nearest-even (torch's cast).
The roundings are those of the torch operations they replace (the float32 RMSNorm then its bf16 cast; the
bf16 SiLU, then the bf16 product), so the results are torch's bits except where ``exp`` (libm's here, a
vectorized one in torch) differs in a last float32 bit that reaches a bf16 rounding boundary; the RMSNorm's
float32 sum runs in index order. Either way the arithmetic is fixed and the same for every row count: the
native target's p is this computation. bfloat16 arrays are passed as their int16 bits (NumPy has no
bfloat16).

The forward calls them through `resispec.engine.model.row_kernels`, compiled ahead of time from this source (numba's JIT
would add ~0.7 s of imports to every start); the JIT functions here are the same code and the fallback.
"""

from __future__ import annotations

import numba
import numpy as np

SIGNATURES = {
    "add_norm_rows": "void(f4[:, ::1], i2[:, ::1], f4[::1], f8, i2[:, ::1])",
    "add_norm_rows_f32": "void(f4[:, ::1], i2[:, ::1], f4[::1], f8, f4[:, ::1])",
    "rotate_store_rows": "void(i2[:, ::1], f4[:, ::1], f4[:, ::1], i8, f4[:, :, ::1], f4[:, :, ::1], "
                         "f4[:, :, ::1], i8)",
    "heads_to_rows": "void(f4[:, :, :], i2[:, ::1])",
    "swiglu_rows": "void(i2[:, ::1], i2[:, ::1])",
}
"""The kernels `resispec.engine.model.row_kernels` compiles ahead of time, with their argument types (C-contiguous
arrays, but the attention output of `heads_to_rows`, which may be a strided view)."""


@numba.njit(cache=True)
def _narrow(values: np.ndarray, out: np.ndarray) -> None:
    """out (int16 bits [n]) = the bfloat16 nearest each of values (float32 [n], contiguous; ties to even, NaN
    stays NaN)."""
    words = values.view(np.uint32)
    for i in range(values.shape[0]):
        word = words[i]
        if values[i] != values[i]:
            word = np.uint32(0x7FC00000)
        out[i] = np.int16((word + np.uint32(0x7FFF) + ((word >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))


@numba.njit(cache=True)
def _widen(bits16: np.ndarray, out: np.ndarray) -> None:
    """out (float32 [n], contiguous) = the bfloat16 values of bits16 (int16 [n]), exactly."""
    words = out.view(np.uint32)
    for i in range(bits16.shape[0]):
        words[i] = np.uint32(np.uint16(bits16[i])) << np.uint32(16)


@numba.njit(cache=True)
def _inverse_rms(h_row: np.ndarray, eps: float) -> np.float32:
    total = np.float32(0)
    for i in range(h_row.shape[0]):
        total += h_row[i] * h_row[i]
    return np.float32(1) / np.sqrt(total / np.float32(h_row.shape[0]) + np.float32(eps))


@numba.njit(cache=True)
def _normalize(h_row: np.ndarray, weight: np.ndarray, eps: float, out: np.ndarray) -> None:
    inverse = _inverse_rms(h_row, eps)
    for i in range(h_row.shape[0]):
        out[i] = np.float32(h_row[i] * inverse) * weight[i]


@numba.njit(cache=True)
def _add_bf16(h_row: np.ndarray, delta: np.ndarray, scratch: np.ndarray) -> None:
    _widen(delta, scratch)
    for i in range(h_row.shape[0]):
        h_row[i] += scratch[i]


@numba.njit(cache=True)
def add_norm_rows(h: np.ndarray, delta: np.ndarray, weight: np.ndarray, eps: float, out: np.ndarray) -> None:
    """h (float32 [rows, n]) += delta (bf16 bits [rows, n]); out (bf16 bits [rows, n]) = bf16 RMSNorm of h
    with weight (float32 [n])."""
    row = np.empty(h.shape[1], dtype=np.float32)
    for r in range(h.shape[0]):
        _add_bf16(h[r], delta[r], row)
        _normalize(h[r], weight, eps, row)
        _narrow(row, out[r])


@numba.njit(cache=True)
def add_norm_rows_f32(h: np.ndarray, delta: np.ndarray, weight: np.ndarray, eps: float, out: np.ndarray) -> None:
    """`add_norm_rows` with out float32 [rows, n] (the normalized rows unrounded, for a float32 product)."""
    row = np.empty(h.shape[1], dtype=np.float32)
    for r in range(h.shape[0]):
        _add_bf16(h[r], delta[r], row)
        _normalize(h[r], weight, eps, out[r])


@numba.njit(cache=True)
def rotate_store_rows(qkv: np.ndarray, cos: np.ndarray, sin_signed: np.ndarray, heads: int, queries: np.ndarray,
                      keys: np.ndarray, values: np.ndarray, start: int) -> None:
    """queries float32 [heads, rows, d] = rope(Q); keys / values float32 [kv_heads, capacity, d] get rope(K)
    and V at entries start .. start + rows - 1. qkv bf16 bits [rows, (heads + 2 kv_heads) d]; cos /
    sin_signed float32 [rows, d]."""
    dim = cos.shape[1]
    half = dim // 2
    kv_heads = keys.shape[0]
    row = np.empty(qkv.shape[1], dtype=np.float32)
    for r in range(qkv.shape[0]):
        _widen(qkv[r], row)
        for head in range(heads + kv_heads):
            base = head * dim
            for i in range(dim):
                rolled = row[base + i + half] if i < half else row[base + i - half]
                value = np.float32(row[base + i] * cos[r, i]) + np.float32(rolled * sin_signed[r, i])
                if head < heads:
                    queries[head, r, i] = value
                else:
                    keys[head - heads, start + r, i] = value
        for head in range(kv_heads):
            base = (heads + kv_heads + head) * dim
            for i in range(dim):
                values[head, start + r, i] = row[base + i]


@numba.njit(cache=True)
def heads_to_rows(attended: np.ndarray, out: np.ndarray) -> None:
    """out (bf16 bits [rows, heads d]) = attended (float32 [heads, rows, d]) with the heads side by side."""
    heads, rows, dim = attended.shape
    row = np.empty(heads * dim, dtype=np.float32)
    for r in range(rows):
        for head in range(heads):
            for i in range(dim):
                row[head * dim + i] = attended[head, r, i]
        _narrow(row, out[r])


@numba.njit(cache=True)
def swiglu_rows(gate_up: np.ndarray, out: np.ndarray) -> None:
    """out (bf16 bits [rows, F]) = bf16(silu(G) U) for gate_up = [G | U] (bf16 bits [rows, 2 F])."""
    width = out.shape[1]
    both = np.empty(2 * width, dtype=np.float32)
    row = np.empty(width, dtype=np.float32)
    for r in range(gate_up.shape[0]):
        _widen(gate_up[r], both)
        for i in range(width):
            row[i] = both[i] / (np.float32(1) + np.exp(-both[i]))
        _narrow(row, out[r])  # silu(G) in bf16, as torch's bf16 SiLU rounds it
        _widen(out[r], row)
        for i in range(width):
            row[i] *= both[width + i]  # exact: a product of two bf16 values fits a float32
        _narrow(row, out[r])
