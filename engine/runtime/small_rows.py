"""Linear layers whose cost stays flat for the few rows a speculative round feeds.

A speculative round sends 2-16 rows through every linear layer of the target. On this CPU MKL's
float32 ``x @ W^T`` takes a per-row path below 4 rows and a slow one from 4 to ~16 rows: the 49152 x 576
head costs about as much for 4 rows as for 3 separate one-row products. MKL-packed weights
(``torch.ops.mkl._mkl_reorder_linear_weight``) packed for a fixed row count run that count at close to a
one-row cost. `PaddedLinear` therefore pads the input to the next *bucket* (1, 2, 4, 8 or 16 rows) with
zero rows, multiplies with the weights packed for that bucket, and drops the padding rows: they never reach
the cache or the output. Row counts above the largest bucket keep the plain product. On the AVX2-only
EPYC (no AVX-512) the one-row packed product is also faster than the plain one: the 49152 x 576 head
14 vs 23 ms, 8 rows 50 vs 67 ms (one thread, medians of 15, load 8.5). The 2- and 4-row buckets pay for
the small trees: padded to 8 rows, 2 rows cost 2-3x a one-row product, packed for 2 about 2x; measured
(one thread, load 1.7, medians of 9-31) for 2 / 3-4 rows, bucket 2 or 4 against bucket 8: the head 17 /
21-24 ms vs 26-30 ms, the fused gate/up 3072 x 576 0.38 / 0.61-0.69 ms vs 0.81-0.99 ms, 960 x 576 0.11 /
0.16 ms vs 0.21-0.22 ms.

A bucket's packed copy is made when a decoder announces the row counts it will feed (`prepare`, before its
timed loop) or else the first time a product of that row count runs: packing 1, 8 and 16 cost about 2.4 s
of start-up for the real target (load 3), and `ar` only ever uses one.

The result equals ``x @ W^T`` up to float32 rounding (a different summation order inside the kernel,
|difference| ~ 1e-6 relative); the model stays the float32 model.
"""

from __future__ import annotations

import torch
from torch.nn import functional

BUCKETS = (1, 2, 4, 8, 16)
"""Row counts for which packed copies of the weights are made (on first use); inputs are padded up to the next one."""


def mkl_packing_available(weight: torch.Tensor) -> bool:
    """Packed MKL products exist for float32 CPU weights in a torch built with MKL."""
    return (weight.device.type == "cpu" and weight.dtype == torch.float32 and torch.backends.mkl.is_available()
            and hasattr(torch.ops.mkl, "_mkl_reorder_linear_weight"))


def bucket_of(rows: int) -> int | None:
    """The bucket a product of ``rows`` rows is padded to (None above the largest: the plain product)."""
    return next((bucket for bucket in BUCKETS if rows <= bucket), None)


class PaddedLinear:
    """``x @ W^T`` for x float [M, in], with the small-row buckets of the module docstring."""

    def __init__(self, weight: torch.Tensor) -> None:
        self.weight = weight.detach().contiguous()
        self.out_features = weight.shape[0]
        self.packed: dict[int, torch.Tensor] = {}
        """bucket -> the weights packed for it, made on first use."""

    def prepare(self, fewest: int, most: int) -> None:
        """Pack now the buckets that products of ``fewest`` to ``most`` rows use."""
        for bucket in {bucket_of(rows) for rows in range(fewest, most + 1)} - {None}:
            self._packed_for(bucket)

    def _packed_for(self, bucket: int) -> torch.Tensor:
        if bucket not in self.packed:
            self.packed[bucket] = torch.ops.mkl._mkl_reorder_linear_weight(self.weight, bucket)
        return self.packed[bucket]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.shape[0]
        bucket = bucket_of(rows)
        if bucket is None:
            return functional.linear(x, self.weight)
        if rows == bucket:
            return torch.ops.mkl._mkl_linear(x.contiguous(), self._packed_for(bucket), self.weight, None, bucket)
        padded = x.new_zeros(bucket, x.shape[1])
        padded[:rows] = x
        return torch.ops.mkl._mkl_linear(padded, self._packed_for(bucket), self.weight, None, bucket)[:rows]
