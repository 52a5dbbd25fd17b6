"""Logits to probabilities, with the same temperature, top-k and top-p for the target p and the draft q.

Exactness is relative to the *processed* target: speculative decoding emits tokens distributed as
``p = process(target logits)``, the distribution plain sampling would use. The draft is processed the
same way for T > 0. Temperature 0 is greedy: p is one-hot at the target's argmax (ties: lowest id); the
draft then keeps T = 1 (with the same top-k/top-p), because a one-hot q cannot supply several distinct
candidates and the draft's law never affects exactness - every exact verifier emits argmax p.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from resispec.limits import MIN_TEMPERATURE


@dataclass(frozen=True)
class Sampling:
    """``temperature`` 0 (greedy) or >= ``resispec.limits.MIN_TEMPERATURE``, ``top_k`` an integer >= 1 or
    None, ``top_p`` in (0, 1] or None (booleans refused)."""

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None

    def __post_init__(self) -> None:
        real = (int, float, np.integer, np.floating)
        if isinstance(self.temperature, bool) or not isinstance(self.temperature, real) or not (
                self.temperature == 0 or MIN_TEMPERATURE <= self.temperature < float("inf")):
            raise ValueError(f"temperature: must be 0 (greedy) or finite and >= {MIN_TEMPERATURE:g} "
                             f"(resispec.limits.MIN_TEMPERATURE), got {self.temperature!r}")
        if self.top_k is not None and (isinstance(self.top_k, bool) or not isinstance(self.top_k, (int, np.integer))
                                       or self.top_k < 1):
            raise ValueError(f"top_k: must be an integer >= 1, got {self.top_k!r}")
        if self.top_p is not None and (isinstance(self.top_p, bool) or not isinstance(self.top_p, real)
                                       or not 0 < self.top_p <= 1):
            raise ValueError(f"top_p: must be a number in (0, 1], got {self.top_p!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def _process(logits: torch.Tensor, temperature: float, top_k: int | None, top_p: float | None) -> torch.Tensor:
    """float64 probabilities [M, V] from logits [M, V]: softmax(logits / T), then top-k, then top-p.

    top-k keeps the k largest probabilities (ties at the k-th value are all kept); top-p keeps the
    smallest set of most probable tokens whose mass reaches ``top_p``; the rest are zeroed and the
    rows renormalised.
    """
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    if top_k is not None and top_k < probs.shape[-1]:
        kth = torch.topk(probs, top_k, dim=-1).values[..., -1:]
        probs = torch.where(probs >= kth, probs, torch.zeros_like(probs))
    if top_p is not None and top_p < 1:
        sorted_probs, order = torch.sort(probs, dim=-1, descending=True)
        mass_before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
        keep_sorted = mass_before < top_p * sorted_probs.sum(dim=-1, keepdim=True)
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
        probs = torch.where(keep, probs, torch.zeros_like(probs))
    return probs / probs.sum(dim=-1, keepdim=True)


def target_probs(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """The processed target p (float64 [M, V]); one-hot at the argmax when greedy."""
    if sampling.greedy:
        return torch.nn.functional.one_hot(logits.argmax(dim=-1), logits.shape[-1]).double()
    return _process(logits, sampling.temperature, sampling.top_k, sampling.top_p)


def draft_probs(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """The processed draft q (float64 [M, V]); at temperature 0 it keeps T = 1 (see module doc)."""
    return _process(logits, sampling.temperature or 1.0, sampling.top_k, sampling.top_p)
