"""Quantized self-drafts: a copy of the target whose linear layers run in int8 or bfloat16.

A self-draft is q = the target's own network computed in lower precision, built at load time from the
target's weights (nothing new on disk). Two schemes:

- ``bf16``: every parameter cast to bfloat16; q = softmax(f_bf16(x)).
- ``int8``: bfloat16 as above, and every ``nn.Linear`` (the output head included) holds int8 weights with
  one scale per output channel, applied to **bfloat16** activations:

      s_o = max_i |W_oi| / 127,   Wq_oi = round(W_oi / s_o) in [-127, 127],   y_bo = s_o * sum_i x_bi Wq_oi,

  computed by ``torch.ops.aten._weight_int8pack_mm`` (a CPU kernel; it is pathologically slow with
  float32 activations, hence bfloat16). The embedding table stays bfloat16 (a lookup, not a product).

Either way the draft only proposes: the verifiers keep the float32 target's law exact whatever q is.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from transformers import PreTrainedModel

SCHEMES = ("int8", "bf16")
INT8_MAX = 127


class Int8Linear(nn.Module):
    """``y = (x_bf16 @ Wq^T) * s``: int8 weights ``Wq`` [out, in] with per-output-channel scales ``s`` [out]."""

    def __init__(self, weight_int8: torch.Tensor, scales: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("weight_int8", weight_int8)
        self.register_buffer("scales", scales)
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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        out = torch.ops.aten._weight_int8pack_mm(x.reshape(-1, shape[-1]).to(torch.bfloat16),
                                                 self.weight_int8, self.scales)
        return out.reshape(*shape[:-1], self.out_features)


def int8_supported(device: torch.device | str) -> bool:
    """Whether the int8 kernel runs on ``device`` (it is a CPU kernel in torch 2.13)."""
    return torch.device(device).type == "cpu"


def quantized_copy(target: PreTrainedModel, scheme: str) -> PreTrainedModel:
    """A self-draft: a deep copy of ``target`` in the given scheme (``int8`` or ``bf16``), eval mode, no grads.

    The copy unties the output head from the embedding (the head is quantized, the lookup table is not).
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme: expected one of {', '.join(SCHEMES)}, got {scheme!r}")
    if scheme == "int8" and not int8_supported(target.device):
        raise ValueError(f"draft int8: the int8 kernel runs on CPU only, not on {target.device}; use bf16")
    draft = copy.deepcopy(target)
    if scheme == "int8":  # quantized from the float32 weights, before the cast
        draft.config.tie_word_embeddings = False
        _swap_linears(draft)
    draft = draft.to(torch.bfloat16)
    return draft.eval().requires_grad_(False)


def _swap_linears(module: nn.Module) -> None:
    """Replace every ``nn.Linear`` below ``module`` by its `Int8Linear`, in place."""
    for name, child in module.named_children():
        if isinstance(child, nn.Linear):
            setattr(module, name, Int8Linear.from_linear(child))
        else:
            _swap_linears(child)
