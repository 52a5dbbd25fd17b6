"""The native target: p computed straight from the GGUF file's quantized blocks with integer kernels.

The float32 target (`resispec.engine.model.models.load_target`) is the file's weights dequantized to float32 and
multiplied in float32. The native target multiplies the **4-bit blocks themselves**: every decoder linear
layer of the file is Q4_1 (blocks of 32 consecutive inputs of one output row, each with float16 ``d`` and
``m`` and levels ``L`` in 0..15, value ``d L + m``), and ``torch._weight_int4pack_mm_for_cpu`` computes
``(L - 8) s + z`` per group of 32 inputs, so the file's blocks map onto it without requantizing:

    s = d,   z = m + 8 d       =>   (L - 8) s + z = d L + m,

with ``s`` and ``z`` (and the activations fed to the kernel) in **bfloat16**, the kernel's fast path: the
float32 path of the same kernel keeps ``d`` and ``m`` exact but is 5-15x slower on this CPU (924 vs 168 us
for one 1536 x 576 row; docs/draft.md). The network around the products stays float32 (the residual
stream, RMSNorm, rotary positions, attention and the KV cache); each product's input is rounded to bfloat16
and its bfloat16 output added to the float32 residual. The embedding lookup is the float32 dequantized
table (``d q``, exact in float32). The **head** (the tied table, Q8_0 in this file: blocks of 32 inputs,
float16 ``d``, int8 ``q``) is computed one of two ways, chosen by the CPU (`native_head_for_this_cpu`):

- ``q8_0`` (where torch runs its AVX-512 kernels): the file's blocks through the same int4 kernel, each
  int8 level split into two 4-bit ones, ``q = 16 h + l`` (``h = q >> 4`` in -8..7, ``l = q & 15``), the
  input fed twice, ``[x, x]``, against ``[l | h + 8]`` with (s, z) = (d, 8 d) on the first copy and
  (16 d, 0) on the second: ``(l - 8) d + 8 d + (h + 8 - 8) 16 d = d q`` exactly, ``d`` in bfloat16. Its
  logits come out in bfloat16. One row of the 49152 x 576 head: 3.4 ms against 6.2 ms for float32 on
  MKL-packed weights (Intel Xeon, AVX-512 BF16 / VNNI, one thread); a one-row forward 25.4 vs 29.4 ms.
- ``float32`` (elsewhere): the float32 table on MKL-packed weights (`resispec.engine.runtime.small_rows`); on the
  AVX2-only EPYC the two-plane int4 head was slower (17 vs 14 ms a row).

Where this project's AVX2 block kernels run instead of torch's int4 kernel (`resispec.engine.model.block_kernels`:
by default on CPUs with AVX2 and no AVX-512 in torch, or ``RESISPEC_BLOCK_KERNELS=avx2``), the Q4_1 layers go
through them with the same bfloat16 ``s``, ``z`` and bfloat16 outputs, and the head is ``q8_0``: the file's int8
levels and bfloat16 ``d`` in one pass, float32 logits (docs/avx2_kernels.md).

The ``q8_0`` head moves p by a total variation of 0.010 per token on average (max 0.026, 150 positions of
sampled text) from the float32 head's p, about as far again as the Q4_1 layers move it from the float32
target's (docs/draft.md); the decode then runs on a p of the CPU's choice, stated by `describe_native`.

**p is defined as that computation**: the verifiers make every emitted token follow it exactly. It is not
the float32 p; docs/draft.md gives the measured TV between the two per token. With the float32 head a
node's p can depend on the row count of the forward that computes it (MKL blocks differently for 1 and k
rows, so the last bits of the sums differ; with the ``q8_0`` head it does not: tested); the p of a node is
therefore the one its *verifying* forward computes, the tree forward in speculative decoding and the
one-row forward in ``ar``.

The layers read from the file are cached (``native-q4_1-v2.safetensors`` beside the dequantized checkpoint,
`resispec.engine.model.gguf.checkpoint_dir`: levels and bfloat16 scales / zeros per layer, with the format version and
the source file's fingerprint in its metadata, `resispec.engine.model.tensor_cache`; a Q8_0 head's levels and
scales too): reading the GGUF's header alone
takes seconds (its 49,152 tokenizer strings). A cache file that cannot be read or does not match is named on
one line on stderr, discarded and rebuilt (progress on stderr: ``resispec.progress``).

Supported: Q4_1 decoder linear layers (``attn_q/k/v/output``, ``ffn_gate/up/down``); Q8_0, F16 or F32
for the embedding / head; F32 norms. Anything else raises one ``ValueError`` naming the tensor, its type
and the supported types. The attention q/k rows are permuted back from the file's rotary layout by
transformers' own ``LlamaTensorProcessor`` (a permutation of whole output rows, so of whole blocks).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from resispec.engine.model.block_kernels import block_kernels, q8_0_product
from resispec.engine.model.compute import NATIVE, native_head_of
from resispec.engine.model.gguf import checkpoint_dir
from resispec.engine.model.quantize import INT4_GROUP, INT4_LEVELS, Int4Linear
from resispec.engine.model.tensor_cache import cached_tensors
from resispec.progress import Progress

if TYPE_CHECKING:
    from gguf import GGUFReader
    from transformers import PreTrainedModel

LINEAR_LAYERS = {"attn_q": ("self_attn", "q_proj"), "attn_k": ("self_attn", "k_proj"),
                 "attn_v": ("self_attn", "v_proj"), "attn_output": ("self_attn", "o_proj"),
                 "ffn_gate": ("mlp", "gate_proj"), "ffn_up": ("mlp", "up_proj"), "ffn_down": ("mlp", "down_proj")}
"""GGUF name of a decoder linear layer (``blk.N.<name>.weight``) -> its module path in a transformers Llama layer."""
LINEAR_TYPES = ("Q4_1",)
TABLE_TYPES = ("Q8_0", "F16", "F32")
NORM_TYPES = ("F32",)
CACHE_FORMAT = "native-q4_1-v2"
"""Name and version of the cached layers; a change to what they hold must change it."""
Q4_1_BLOCK_BYTES = 20
"""A Q4_1 block: float16 d, float16 m, then 16 bytes of levels (element j low nibble, element 16 + j high)."""
Q8_0_BLOCK_BYTES = 34
"""A Q8_0 block: float16 d, then 32 int8 levels."""
HEADS = ("q8_0", "float32")
"""How the native target's head is computed (module docstring)."""
HEAD_TENSORS = ("output.weight", "token_embd.weight")
"""Where a GGUF keeps the head: its own tensor, else the tied embedding."""


def _supported(name: str) -> tuple[str, tuple[str, ...]]:
    """What kind of tensor ``name`` is and the types the native target takes for it."""
    if name.startswith("blk.") and name.split(".")[2] in LINEAR_LAYERS:
        return "linear layers", LINEAR_TYPES
    if name.startswith(("token_embd", "output.")):
        return "the embedding / head", TABLE_TYPES
    return "norms", NORM_TYPES


def check_native_types(reader: GGUFReader, path: Path) -> None:
    """ValueError (one line) at the first tensor whose quantization type the native target does not take."""
    for tensor in reader.tensors:
        kind, types = _supported(tensor.name)
        if tensor.tensor_type.name not in types:
            raise ValueError(
                f"target-compute native: {path.name}: tensor {tensor.name} is {tensor.tensor_type.name}; supported: "
                f"{'/'.join(LINEAR_TYPES)} for linear layers, {'/'.join(TABLE_TYPES)} for the embedding / head, "
                f"{'/'.join(NORM_TYPES)} for norms (or use --target-compute float32)")


class FileBlocksLinear(Int4Linear):
    """A layer of the file's own blocks through the int4 kernel, its output in the input's dtype (float32
    into the float32 residual stream and logits)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x).to(x.dtype)


class Q4_1Linear(FileBlocksLinear):
    """A Q4_1 layer of the file through the int4 kernel: ``y = x_bf16 @ W^T``, ``W_oi = d L_oi + m`` per block
    (module docstring); the output takes the input's dtype (float32 into the float32 residual stream)."""

    @classmethod
    def from_blocks(cls, blocks: np.ndarray) -> Q4_1Linear:
        """From the file's raw blocks, uint8 [out, in / 32 * 20] (one row of blocks per output)."""
        out_features, row_bytes = blocks.shape
        if row_bytes % Q4_1_BLOCK_BYTES:
            raise ValueError(f"Q4_1Linear: a row of {row_bytes} bytes is not a whole number of {Q4_1_BLOCK_BYTES}-byte "
                             "Q4_1 blocks")
        groups = blocks.reshape(out_features, row_bytes // Q4_1_BLOCK_BYTES, Q4_1_BLOCK_BYTES)
        d = torch.from_numpy(np.ascontiguousarray(groups[..., 0:2]).view(np.float16)[..., 0].astype(np.float32))
        m = torch.from_numpy(np.ascontiguousarray(groups[..., 2:4]).view(np.float16)[..., 0].astype(np.float32))
        packed = torch.from_numpy(np.ascontiguousarray(groups[..., 4:]))
        levels = torch.cat([packed & 0x0F, packed >> 4], dim=-1).reshape(out_features, -1)
        scales_and_zeros = torch.stack([d, m + (INT4_LEVELS + 1) // 2 * d], dim=-1).transpose(0, 1)  # z = m + 8 d
        return cls(levels.contiguous(), scales_and_zeros.contiguous().to(torch.bfloat16))


class Q8_0Linear(FileBlocksLinear):
    """A Q8_0 table of the file as a linear layer through the int4 kernel, ``y = x_bf16 @ (d q)^T`` with
    ``d`` in bfloat16 (the two 4-bit planes of the module docstring); the output takes the input's dtype.

    Holds levels uint8 [out, 2 in] (``[l | h + 8]``) and scales / zeros [2 in / 32, out, 2]; ``in_features``
    is the table's width, half the kernel's."""

    def __init__(self, levels: torch.Tensor, scales_and_zeros: torch.Tensor,
                 packed: torch.Tensor | None = None) -> None:
        super().__init__(levels, scales_and_zeros, packed)
        self.in_features = levels.shape[1] // 2

    @classmethod
    def from_levels(cls, q: torch.Tensor, d: torch.Tensor) -> Q8_0Linear:
        """From the file's levels ``q`` (int8 [out, in]) and block scales ``d`` (float [out, in / 32])."""
        levels = torch.cat([q & 0x0F, (q >> 4) + (INT4_LEVELS + 1) // 2], dim=1).to(torch.uint8)  # int8 shift
        scale = d.to(torch.bfloat16)
        low = torch.stack([scale, (INT4_LEVELS + 1) // 2 * scale], dim=-1)  # (d, 8 d): (l - 8) d + 8 d = l d
        high = torch.stack([16 * scale, torch.zeros_like(scale)], dim=-1)  # (16 d, 0): (h + 8 - 8) 16 d
        return cls(levels.contiguous(), torch.cat([low, high], dim=1).transpose(0, 1).contiguous())

    @staticmethod
    def split_blocks(blocks: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """The file's raw Q8_0 rows, uint8 [out, in / 32 * 34], as (q int8 [out, in], d float32 [out, in / 32])."""
        out_features, row_bytes = blocks.shape
        if row_bytes % Q8_0_BLOCK_BYTES:
            raise ValueError(f"Q8_0Linear: a row of {row_bytes} bytes is not a whole number of {Q8_0_BLOCK_BYTES}-"
                             "byte Q8_0 blocks")
        groups = blocks.reshape(out_features, row_bytes // Q8_0_BLOCK_BYTES, Q8_0_BLOCK_BYTES)
        d = np.ascontiguousarray(groups[..., 0:2]).view(np.float16)[..., 0].astype(np.float32)
        q = np.ascontiguousarray(groups[..., 2:]).view(np.int8).reshape(out_features, -1)
        return torch.from_numpy(q), torch.from_numpy(d)

    def bound_product(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """The two planes through torch's int4 kernel (bfloat16 logits), or the file's levels through the AVX2 Q8_0
        kernel where `resispec.engine.model.block_kernels` picks it (float32 logits)."""
        if block_kernels() == "avx2":
            if self.avx2_product is None:
                low, high = self.levels[:, : self.in_features], self.levels[:, self.in_features:]
                q = (((high ^ 8) << 4) | low).view(torch.int8)  # q's byte: (h mod 16) << 4 | l, h + 8 = high
                d = self.scales_and_zeros[: self.in_features // INT4_GROUP, :, 0].transpose(0, 1)  # the first plane's
                self.avx2_product = q8_0_product(q, d)
            return self.avx2_product
        planes = Int4Linear.bound_product(self)
        return lambda rows: planes(torch.cat([rows, rows], dim=-1))


def native_head_for_this_cpu() -> str:
    """``q8_0`` where torch runs its AVX-512 kernels (the two-plane int4 head is faster there) or the AVX2 block
    kernels run (`resispec.engine.model.block_kernels`), else ``float32`` (module docstring)."""
    avx512 = torch.backends.cpu.get_cpu_capability().startswith("AVX512")
    return "q8_0" if avx512 or block_kernels() == "avx2" else "float32"


def describe_native(model: torch.nn.Module) -> str:
    """One line for a report: the native target's head and the CPU kernels torch picked."""
    return (f"native target: Q4_1 layers through the int4 kernel, head {native_head_of(model)}; "
            f"torch CPU kernels {torch.backends.cpu.get_cpu_capability()}, block kernels {block_kernels()}")


def _rows(reader_tensor, config) -> np.ndarray:
    """The tensor's raw blocks as rows (uint8 [out, bytes]), q/k rows permuted back to transformers' order."""
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor  # here: built once, then cached

    processor = LlamaTensorProcessor(config={"num_attention_heads": config.num_attention_heads,
                                             "num_key_value_heads": config.num_key_value_heads})
    return np.asarray(processor.process(np.asarray(reader_tensor.data), reader_tensor.name).weights)


def read_layers(gguf_path: Path, config) -> tuple[dict[tuple[int, str], Q4_1Linear], dict[str, torch.Tensor]]:
    """Every decoder linear layer of the file, by (layer index, GGUF name), and its head's Q8_0 levels and
    scales (``{"q": int8 [vocab, hidden], "d": float32 [vocab, hidden / 32]}``; empty for another type),
    with a progress bar; ValueError for a tensor type the native target does not take (`check_native_types`)."""
    from gguf import GGUFReader  # here: the layers are read once, then cached (`cached_layers`)

    with Progress(total=2, desc=f"native target: reading {gguf_path.name}", unit="step") as bar:
        reader = GGUFReader(gguf_path)
        check_native_types(reader, gguf_path)
        bar.update()
        tensors = [t for t in reader.tensors if t.name.startswith("blk.") and t.name.split(".")[2] in LINEAR_LAYERS]
        bar.set_total(2 + len(tensors))
        layers = {}
        for tensor in tensors:
            parts = tensor.name.split(".")
            layers[int(parts[1]), parts[2]] = Q4_1Linear.from_blocks(_rows(tensor, config))
            bar.update()
        by_name = {tensor.name: tensor for tensor in reader.tensors}
        table = next(by_name[name] for name in HEAD_TENSORS if name in by_name)
        head = {}
        if table.tensor_type.name == "Q8_0":
            head["q"], head["d"] = Q8_0Linear.split_blocks(np.asarray(table.data))
        bar.update()
    return layers, head


def cached_layers(gguf_path: Path, config) -> tuple[dict[tuple[int, str], Q4_1Linear], dict[str, torch.Tensor]]:
    """`read_layers`, through the cache file of the module docstring (`resispec.engine.model.tensor_cache`)."""

    def build() -> dict[str, torch.Tensor]:
        layers, head = read_layers(gguf_path, config)
        flat = {f"head.{name}": tensor for name, tensor in head.items()}
        for (index, name), linear in layers.items():
            flat[f"{index}.{name}.levels"] = linear.levels
            flat[f"{index}.{name}.scales_and_zeros"] = linear.scales_and_zeros
        return flat

    flat = cached_tensors(checkpoint_dir(gguf_path) / f"{CACHE_FORMAT}.safetensors", CACHE_FORMAT, gguf_path, build,
                          "native target's layers")
    layers = {(int(key.split(".")[0]), key.split(".")[1]):
              Q4_1Linear(flat[key], flat[key.replace(".levels", ".scales_and_zeros")])
              for key in flat if key.endswith(".levels")}
    return layers, {key.removeprefix("head."): flat[key] for key in flat if key.startswith("head.")}


def native_model(float_model: PreTrainedModel, gguf_path: str | Path, head: str | None = None) -> PreTrainedModel:
    """The native target built from ``gguf_path`` around ``float_model`` (the float32 target made from the
    same file: its embedding, norms and rotary tensors are shared, not copied; its decoder linear layers are
    replaced by `Q4_1Linear` layers read from the file's blocks). ``head``: ``q8_0`` (a `Q8_0Linear` of the
    file's head blocks; a head of another type stays float32) or ``float32`` (the shared table); default
    `native_head_for_this_cpu`. Eval mode, no grads; ``native_head`` says which head it got.

    Raises ValueError for a tensor type the native target does not take (`check_native_types`), an unknown
    ``head``, or a file whose layers do not match ``float_model``'s shapes.
    """
    head = native_head_for_this_cpu() if head is None else head
    if head not in HEADS:
        raise ValueError(f"native head: expected one of {', '.join(HEADS)}, got {head!r}")
    path = Path(gguf_path)
    shared = {id(t): t for t in [*float_model.parameters(), *float_model.buffers()]}
    native = copy.deepcopy(float_model, memo=shared)
    layers = native.model.layers
    read, head_blocks = cached_layers(path, native.config)
    wanted = {(index, name) for index in range(len(layers)) for name in LINEAR_LAYERS}
    if set(read) != wanted:
        raise ValueError(f"target-compute native: {path.name} holds decoder linear layers {len(read)} of the "
                         f"model's {len(wanted)} (or others: layer indices up to {max(i for i, _ in read)})")
    for (index, name), linear in read.items():
        block, attribute = LINEAR_LAYERS[name]
        owner = getattr(layers[index], block)
        expected = tuple(getattr(owner, attribute).weight.shape)
        if (linear.out_features, linear.in_features) != expected:
            raise ValueError(f"target-compute native: {path.name}: blk.{index}.{name} is {linear.out_features} x "
                             f"{linear.in_features}, the model's layer {expected[0]} x {expected[1]}")
        setattr(owner, attribute, linear)
    native.native_head = "float32"
    if head == "q8_0" and head_blocks:
        if tuple(head_blocks["q"].shape) != tuple(native.lm_head.weight.shape):
            raise ValueError(f"target-compute native: {path.name}: the head is {tuple(head_blocks['q'].shape)}, "
                             f"the model's {tuple(native.lm_head.weight.shape)}")
        native.lm_head = Q8_0Linear.from_levels(head_blocks["q"], head_blocks["d"])
        native.native_head = "q8_0"
    native.target_compute = NATIVE
    return native.eval().requires_grad_(False)
