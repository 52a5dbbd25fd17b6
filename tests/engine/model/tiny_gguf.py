"""A tiny synthetic Llama GGUF file written with the ``gguf`` package: Q4_1 decoder linear layers, a Q8_0 tied
embedding / head and F32 norms, the layout of the shipped SmolLM2 file, at a size a test loads in a blink."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter
from gguf.quants import quantize

HIDDEN, INTERMEDIATE, LAYERS, HEADS, KV_HEADS, VOCAB = 192, 96, 2, 3, 1, 64
"""Sizes the int4 kernel takes (every input count a multiple of 32, every output count a multiple of 16), with
the real model's head size 64 and 3 query heads per key head."""


def write_tiny_gguf(path: Path, seed: int = 0, linear_type: GGMLQuantizationType = GGMLQuantizationType.Q4_1) -> Path:
    """Write the tiny model to ``path`` (its decoder linear layers as ``linear_type``) and return ``path``.

    Weights are seeded normal draws (scale 0.3, the embedding 0.15); q/k rows are written in the file's rotary
    layout as they come (any rows are a valid file: the reader permutes them back)."""
    rng = np.random.default_rng(seed)
    head_dim = HIDDEN // HEADS
    writer = GGUFWriter(str(path), "llama")
    writer.add_block_count(LAYERS)
    writer.add_context_length(256)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(INTERMEDIATE)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(VOCAB)

    def add(name: str, shape: tuple[int, int], qtype: GGMLQuantizationType, scale: float = 0.3) -> None:
        weight = (scale * rng.standard_normal(shape)).astype(np.float32)
        writer.add_tensor(name, quantize(weight, qtype), raw_dtype=qtype)

    add("token_embd.weight", (VOCAB, HIDDEN), GGMLQuantizationType.Q8_0, 0.15)
    writer.add_tensor("output_norm.weight", (1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32))
    shapes = {"attn_q": (HIDDEN, HIDDEN), "attn_k": (KV_HEADS * head_dim, HIDDEN),
              "attn_v": (KV_HEADS * head_dim, HIDDEN), "attn_output": (HIDDEN, HIDDEN),
              "ffn_gate": (INTERMEDIATE, HIDDEN), "ffn_up": (INTERMEDIATE, HIDDEN), "ffn_down": (HIDDEN, INTERMEDIATE)}
    for layer in range(LAYERS):
        for norm in ("attn_norm", "ffn_norm"):
            writer.add_tensor(f"blk.{layer}.{norm}.weight", (1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32))
        for name, shape in shapes.items():
            add(f"blk.{layer}.{name}.weight", shape, linear_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
