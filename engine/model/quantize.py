"""Quantized self-drafts: a copy of the target whose linear layers run in int4, int8 or bfloat16.

A self-draft is q = the target's own network computed in lower precision, built at load time from the
target's weights (nothing new on disk). Three schemes:

- ``bf16``: every parameter cast to bfloat16; q = softmax(f_bf16(x)).
- ``int8``: bfloat16 as above, and every ``nn.Linear`` (the output head included) holds int8 weights with
  one scale per output channel, applied to **bfloat16** activations:

      s_o = max_i |W_oi| / 127,   Wq_oi = round(W_oi / s_o) in [-127, 127],   y_bo = s_o * sum_i x_bi Wq_oi,

  computed by ``torch.ops.aten._weight_int8pack_mm`` (a CPU kernel; it is pathologically slow with
  float32 activations, hence bfloat16). The embedding table stays bfloat16 (a lookup, not a product).
- ``int4``: as ``int8``, except that the decoder layers' linear layers hold 4-bit weights, asymmetric in
  groups of G = 32 consecutive inputs (the head stays int8: it decides q directly):

      for each output o and group g:  m = min W_o,g,  s = (max W_o,g - m) / 15,
      L_oi = round((W_oi - m) / s) in [0, 15],   W~_oi = (L_oi - 8) s + z,  z = m + 8 s,

  computed by ``torch.ops.aten._weight_int4pack_mm_for_cpu`` (bfloat16 activations). It reads half the
  bytes of ``int8`` per token, and the small groups keep it as close to the target as ``int8``
  (docs/draft.md has the measured overlap). Layers whose shapes the kernel cannot take (an output count
  not a multiple of 16, an input count not a multiple of G) fall back to ``int8``.

Either way the draft only proposes: the verifiers keep the float32 target's law exact whatever q is.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn

from resispec.engine.model.block_kernels import block_kernels, q4_1_product
from resispec.engine.model.compute import target_compute_of
from resispec.engine.model.gguf import cache_root
from resispec.engine.model.tensor_cache import cached_tensors

if TYPE_CHECKING:
    from transformers import PreTrainedModel

SCHEMES = ("int4", "int8", "bf16")
INT8_MAX = 127
INT4_LEVELS = 15
INT4_GROUP = 32
INT4_OUTPUT_MULTIPLE = 16


@functools.cache
def int4_pack_rows() -> int:
    """Output rows per block of the int4 kernel's packed layout on this CPU, found by packing: the smallest
    r for which two r-row matrices packed apart and stacked equal the two packed together (torch 2.13: 32
    on AVX2, 64 on AVX-512; a copy assuming 32 on AVX-512 read its weights out of order and crashed)."""
    for rows in (16, 32, 64, 128, 256):
        levels = torch.arange(2 * rows * INT4_GROUP, dtype=torch.int32).reshape(2 * rows, INT4_GROUP) % 16
        apart = torch.cat([torch._convert_weight_to_int4pack_for_cpu(half, 1) for half in levels.split(rows)])
        if torch.equal(apart, torch._convert_weight_to_int4pack_for_cpu(levels, 1)):
            return rows
    raise RuntimeError("int4 kernel: no block of up to 256 output rows packs apart as it packs together")


KERNEL_ALIGNMENT = 64
"""Bytes to which the integer kernels' weights are aligned (`aligned`)."""


def aligned(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor``, contiguous and starting at a multiple of ``KERNEL_ALIGNMENT`` bytes (copied if it is not).

    ``aten._weight_int8pack_mm``'s AVX-512 path (torch 2.13) crashes with a segmentation fault on int8
    weights that start 8 bytes past such a boundary, as tensors read from a safetensors file do; the AVX2
    path does not. torch's own allocations are aligned, so only such views are copied."""
    tensor = tensor.contiguous()
    return tensor if tensor.data_ptr() % KERNEL_ALIGNMENT == 0 else tensor.clone()


class _KernelLinear(nn.Module):
    """A linear layer computed by a bfloat16 [rows, in] -> [rows, out] kernel call (`bound_product`), for
    inputs of any leading shape and dtype."""

    out_features: int

    def bound_product(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """The kernel call, bfloat16 [rows, in] -> bfloat16 [rows, out], with this layer's tensors bound: no
        module attribute lookups in the call (about 1.3 us each, two a product; the engine calls it directly,
        120 products a token of the target)."""
        raise NotImplementedError

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        rows = x.reshape(-1, shape[-1]).to(torch.bfloat16)
        return self.bound_product()(rows).reshape(*shape[:-1], self.out_features)


class Int8Linear(_KernelLinear):
    """``y = (x_bf16 @ Wq^T) * s``: int8 weights ``Wq`` [out, in] with per-output-channel scales ``s`` [out]."""

    def __init__(self, weight_int8: torch.Tensor, scales: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("weight_int8", aligned(weight_int8))
        self.register_buffer("scales", aligned(scales))
        self.in_features = weight_int8.shape[1]
        self.out_features = weight_int8.shape[0]

    @classmethod
    def from_linear(cls, linear: nn.Linear) -> Int8Linear:
        """Quantize ``linear`` (no bias) per output channel (module docstring)."""
        if linear.bias is not None:
            raise ValueError("Int8Linear: linear layers with a bias are not supported")
        weight = linear.weight.detach().float()
        scales = (weight.abs().amax(dim=1) / INT8_MAX).clamp(min=torch.finfo(torch.float32).tiny)
        quantized = torch.round(weight / scales[:, None]).clamp(-INT8_MAX, INT8_MAX).to(torch.int8)
        return cls(quantized.contiguous(), scales.to(torch.bfloat16))

    @classmethod
    def concatenate(cls, parts: list[Int8Linear]) -> Int8Linear:
        """One layer computing the outputs of ``parts`` side by side (fused q/k/v or gate/up)."""
        return cls(torch.cat([p.weight_int8 for p in parts]), torch.cat([p.scales for p in parts]))

    def bound_product(self) -> Callable[[torch.Tensor], torch.Tensor]:
        weight, scales = self.weight_int8, self.scales
        return lambda rows: torch.ops.aten._weight_int8pack_mm(rows, weight, scales)


class Int4Linear(_KernelLinear):
    """``y = x_bf16 @ W~^T`` with W~ the group-wise 4-bit weights of the module docstring.

    Keeps the levels L (uint8 [out, in], one per weight) and the kernel's packed copy (uint8 [out, in / 2],
    packed from L unless given: the kernel packs blocks of `int4_pack_rows` output rows, so where every part
    but the last is whole blocks the packed copy of layers side by side is their packed copies side by side,
    and `concatenate` packs nothing: the real model's q/k/v and gate/up);
    ``scales_and_zeros`` is [in / G, out, 2] (s, z) in bfloat16, the kernel's layout.
    """

    def __init__(self, levels: torch.Tensor, scales_and_zeros: torch.Tensor,
                 packed: torch.Tensor | None = None) -> None:
        super().__init__()
        self.levels = levels
        if packed is None:
            packed = torch._convert_weight_to_int4pack_for_cpu(levels.to(torch.int32), 1)
        self.register_buffer("packed", aligned(packed))
        self.register_buffer("scales_and_zeros", aligned(scales_and_zeros))
        self.out_features, self.in_features = levels.shape
        self.avx2_product: Callable[[torch.Tensor], torch.Tensor] | None = None
        """The AVX2 kernel's product, made on first use (`bound_product`)."""

    @staticmethod
    def fits(linear: nn.Linear) -> bool:
        """Whether the kernel takes ``linear``'s shape (module docstring)."""
        out_features, in_features = linear.weight.shape
        return out_features % INT4_OUTPUT_MULTIPLE == 0 and in_features % INT4_GROUP == 0

    @classmethod
    def from_linear(cls, linear: nn.Linear) -> Int4Linear:
        """Quantize ``linear`` (no bias) in groups of ``INT4_GROUP`` inputs (module docstring)."""
        if linear.bias is not None:
            raise ValueError("Int4Linear: linear layers with a bias are not supported")
        if not cls.fits(linear):
            raise ValueError(f"Int4Linear: shape {tuple(linear.weight.shape)} needs out % {INT4_OUTPUT_MULTIPLE} == 0 "
                             f"and in % {INT4_GROUP} == 0")
        weight = linear.weight.detach().float()
        out_features, in_features = weight.shape
        groups = weight.reshape(out_features, in_features // INT4_GROUP, INT4_GROUP)
        low = groups.amin(dim=-1, keepdim=True)
        scales = ((groups.amax(dim=-1, keepdim=True) - low) / INT4_LEVELS).clamp(min=torch.finfo(torch.float32).tiny)
        levels = torch.round((groups - low) / scales).clamp(0, INT4_LEVELS).to(torch.uint8)
        zeros = low + (INT4_LEVELS + 1) // 2 * scales
        scales_and_zeros = torch.stack([scales[..., 0], zeros[..., 0]], dim=-1).transpose(0, 1)
        return cls(levels.reshape(out_features, in_features), scales_and_zeros.contiguous().to(torch.bfloat16))

    @classmethod
    def concatenate(cls, parts: list[Int4Linear]) -> Int4Linear:
        """One layer computing the outputs of ``parts`` side by side (fused q/k/v or gate/up)."""
        whole_blocks = all(p.out_features % int4_pack_rows() == 0 for p in parts[:-1])
        return cls(torch.cat([p.levels for p in parts]), torch.cat([p.scales_and_zeros for p in parts], dim=1),
                   torch.cat([p.packed for p in parts]) if whole_blocks else None)

    def bound_product(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """torch's int4 kernel, or the AVX2 one where `resispec.engine.model.block_kernels` picks it."""
        if block_kernels() == "avx2":
            if self.avx2_product is None:
                self.avx2_product = q4_1_product(self.levels, self.scales_and_zeros)
            return self.avx2_product
        packed, scales_and_zeros = self.packed, self.scales_and_zeros
        return lambda rows: torch._weight_int4pack_mm_for_cpu(rows, packed, INT4_GROUP, scales_and_zeros)


def integer_kernels_run_on(device: torch.device | str) -> bool:
    """Whether the int8 and int4 kernels run on ``device`` (they are CPU kernels in torch 2.13)."""
    return torch.device(device).type == "cpu"


def quantized_copy(target: PreTrainedModel, scheme: str) -> PreTrainedModel:
    """A self-draft: a deep copy of ``target`` in the given scheme (``int4``, ``int8`` or ``bf16``), eval mode,
    no grads.

    The copy unties the output head from the embedding (the head is quantized, the lookup table is not). The
    quantized products of a target loaded from a resispec checkpoint are cached beside it (`_products`).
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme: expected one of {', '.join(SCHEMES)}, got {scheme!r}")
    if scheme != "bf16" and not integer_kernels_run_on(target.device):
        raise ValueError(f"draft {scheme}: the {scheme} kernel runs on CPU only, not on {target.device}; use bf16")
    linears = {} if scheme == "bf16" else {name: m for name, m in target.named_modules() if isinstance(m, nn.Linear)}
    replaced = {id(m.weight): m.weight for name, m in linears.items() if not _is_head(name)}  # not copied: dropped
    draft = copy.deepcopy(target, memo=replaced)
    vars(draft).pop("target_compute", None)  # a copy of the native target is a draft, not the native target
    if linears:  # quantized from the float32 weights, before the cast
        draft.config.tie_word_embeddings = False
        products = _products(target, scheme, lambda: _quantized(linears, int4=scheme == "int4"))
        for name in linears:
            draft.set_submodule(name, _product(products, name))
    draft = draft.to(torch.bfloat16)
    return draft.eval().requires_grad_(False)


QUANTIZED_CACHE_FORMAT = "quantized-products-v1"
"""Version of the cached self-draft products (`_products`); a change to what they hold must change it."""


def _is_head(name: str) -> bool:
    return name.rsplit(".", 1)[-1] == "lm_head"


def _quantized(linears: dict[str, nn.Linear], int4: bool) -> dict[str, torch.Tensor]:
    """The tensors of every layer's `Int8Linear`, by module name; with ``int4``, of the decoder layers'
    `Int4Linear` where the kernel takes the shape (the head stays int8)."""
    flat = {}
    for name, linear in linears.items():
        if int4 and not _is_head(name) and Int4Linear.fits(linear):
            quantized = Int4Linear.from_linear(linear)
            flat[f"{name}.levels"], flat[f"{name}.scales_and_zeros"] = quantized.levels, quantized.scales_and_zeros
        else:
            quantized = Int8Linear.from_linear(linear)
            flat[f"{name}.weight_int8"], flat[f"{name}.scales"] = quantized.weight_int8, quantized.scales
    return flat


def _product(flat: dict[str, torch.Tensor], name: str) -> _KernelLinear:
    """The layer ``name`` of `_quantized`'s tensors."""
    if f"{name}.levels" in flat:
        return Int4Linear(flat[f"{name}.levels"], flat[f"{name}.scales_and_zeros"])
    return Int8Linear(flat[f"{name}.weight_int8"], flat[f"{name}.scales"])


def _products(target: PreTrainedModel, scheme: str, build) -> dict[str, torch.Tensor]:
    """``build()``, cached (`resispec.engine.model.tensor_cache`) beside ``target``'s checkpoint when it is a resispec
    checkpoint (`resispec.engine.model.gguf.checkpoint_dir`: a folder of the cache root), keyed by its
    ``model.safetensors`` and how the target is computed (the native target's copy quantizes only its head)."""
    folder = Path(getattr(target, "name_or_path", "") or "")
    source = folder / "model.safetensors"
    if not (folder.is_absolute() and source.is_file() and folder.resolve().parent == cache_root().resolve()):
        return build()
    compute = target_compute_of(target)
    return cached_tensors(folder / f"self-draft-{scheme}-{compute}.safetensors", QUANTIZED_CACHE_FORMAT, source,
                          build, f"the {scheme} self-draft of the {compute} target")
