"""The processing law: temperature, then top-k, then top-p, from logits or probabilities (array API).

Exactness is relative to the *processed* target: a speculative sampler with processing claims must emit
tokens distributed as ``process(target)``, the law plain sampling with those settings draws from. Written
once over the array API standard (NumPy or torch rows ``(..., V)``, any device), so the core's audits and
an engine compute the same law:

    probs = softmax(logits / T)                          (T > 0; T = 0: one-hot at the argmax, lowest id on ties)
    top-k: keep the k largest probabilities; every tie at the k-th value is kept
    top-p: keep the smallest set of most probable tokens whose mass reaches top_p (rank order of a
           descending stable sort: tokens before the cut, ties broken by ascending id)
    renormalise the kept tokens.

``process_probs`` is the same law from probabilities (``logits = log p``, ``-inf`` where ``p = 0``, so a
token of probability 0 stays at 0 under every setting).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from resispec.limits import MIN_TEMPERATURE
from resispec.rows import Array, device_of, float_errors_allowed, gather_rows, namespace


@dataclass(frozen=True)
class Processing:
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
        """True at temperature 0 (the law is one-hot at the argmax)."""
        return self.temperature == 0

    @property
    def identity(self) -> bool:
        """True when the law is the model's own (T = 1, no top-k, no top-p)."""
        return self.temperature == 1 and self.top_k is None and (self.top_p is None or self.top_p == 1)

    def describe(self) -> str:
        parts = [f"T = {self.temperature:g}"]
        if self.top_k is not None:
            parts.append(f"top-k {self.top_k}")
        if self.top_p is not None:
            parts.append(f"top-p {self.top_p:g}")
        return ", ".join(parts)


def process_logits(logits: Array, processing: Processing) -> Array:
    """The processed law (rows ``(..., V)``, the input's float dtype) of ``logits`` (module doc)."""
    xp = namespace(logits)
    if processing.temperature == 0:
        return _one_hot(xp, logits)
    scaled = logits / processing.temperature
    top = xp.max(scaled, axis=-1, keepdims=True)
    with float_errors_allowed(logits):
        weights = xp.exp(scaled - top)
    probs = weights / xp.sum(weights, axis=-1, keepdims=True)
    vocab = probs.shape[-1]
    if processing.top_k is not None and processing.top_k < vocab:
        kth = xp.sort(probs, axis=-1, descending=True)[..., processing.top_k - 1:processing.top_k]
        probs = xp.where(probs >= kth, probs, xp.zeros_like(probs))
    if processing.top_p is not None and processing.top_p < 1:
        order = xp.argsort(probs, axis=-1, descending=True, stable=True)
        ordered = gather_rows(probs, order)
        mass_before = xp.cumulative_sum(ordered, axis=-1) - ordered
        keep_sorted = mass_before < processing.top_p * xp.sum(probs, axis=-1, keepdims=True)
        keep = gather_rows(keep_sorted, xp.argsort(order, axis=-1, stable=True))
        probs = xp.where(keep, probs, xp.zeros_like(probs))
    return probs / xp.sum(probs, axis=-1, keepdims=True)


def _one_hot(xp, logits: Array) -> Array:
    """One-hot rows at the argmax of ``logits`` (lowest id on ties)."""
    vocab = logits.shape[-1]
    index = xp.argmax(logits, axis=-1)[..., None]
    ids = xp.reshape(xp.arange(vocab, device=device_of(logits)), (1,) * (logits.ndim - 1) + (vocab,))
    return xp.astype(index == ids, logits.dtype)


def process_probs(probs: Array, processing: Processing) -> Array:
    """The processed law of probability rows ``probs`` (``(..., V)``): ``process_logits(log probs)``."""
    if processing.identity:
        return probs
    xp = namespace(probs)
    with float_errors_allowed(probs):
        logits = xp.log(probs)
    return process_logits(logits, processing)
