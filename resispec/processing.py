"""The processing law: logit rules over a history, temperature, min-p, top-k, top-p (array API).

Exactness is relative to the *processed* target: a speculative sampler with processing claims must emit
tokens distributed as ``process(target)``, the law plain sampling with those settings draws from. Written
once over the array API standard (NumPy or torch rows ``(..., V)``, any device), so the core's audits and
an engine compute the same law. ``history`` is the ids generated before the row's token (for a speculative
round: the tokens before the round, then the round's earlier drafted tokens), ``c_t`` the count of token t in it:

    z = logits
    repetition:  z_t = z_t / r if z_t > 0 else z_t * r      for every t with c_t > 0 (the sign of the logit
                 matters: HF's and vLLM's rule, so it needs real logits, not log-probabilities)
    frequency, presence:  z_t -= f c_t + a [c_t > 0]         (OpenAI's and vLLM's rule)
    logit_bias:  z_t += bias_t
    banned ids, tokens outside ``allowed``, and ``eos`` while len(history) < min_tokens:  z_t = -inf
    probs = softmax(z / T)                               (T > 0; T = 0: one-hot at the argmax, lowest id on ties)
    min-p: keep the tokens with probs >= min_p * max(probs)
    top-k: keep the k largest probabilities; every tie at the k-th value is kept
    top-p: keep the smallest set of most probable tokens whose mass reaches top_p (rank order of a
           descending stable sort: tokens before the cut, ties broken by ascending id)
    renormalise the kept tokens.

vLLM's sampler applies the same steps in this order (logits processors and penalties, temperature, min-p, top-k
and top-p); every rule of the first block acts on logits before the temperature.

``process_probs`` is the same law from probabilities (``logits = log p``, ``-inf`` where ``p = 0``, so a
token of probability 0 stays at 0 under every setting).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from resispec.limits import MIN_TEMPERATURE
from resispec.rows import Array, device_of, float_errors_allowed, gather_rows, namespace


@dataclass(frozen=True)
class Processing:
    """``temperature`` 0 (greedy) or >= ``resispec.limits.MIN_TEMPERATURE``, ``top_k`` an integer >= 1 or
    None, ``top_p`` and ``min_p`` in (0, 1] or None (booleans refused); ``logit_bias`` ``((id, bias), ...)``,
    ``repetition_penalty`` > 0, ``presence_penalty`` / ``frequency_penalty`` finite, ``banned`` ids, ``allowed``
    ids (None: all), ``min_tokens`` >= 0 with the ``eos`` id it holds back (module doc). Ids are checked against
    the vocabulary where the rule is applied."""

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    logit_bias: tuple[tuple[int, float], ...] = ()
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    banned: tuple[int, ...] = ()
    allowed: tuple[int, ...] | None = None
    min_tokens: int = 0
    eos: int | None = None

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
        if self.min_p is not None and (isinstance(self.min_p, bool) or not isinstance(self.min_p, real)
                                       or not 0 < self.min_p <= 1):
            raise ValueError(f"min_p: must be a number in (0, 1], got {self.min_p!r}")
        for name in ("repetition_penalty", "presence_penalty", "frequency_penalty"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, real) or not np.isfinite(value) or (
                    name == "repetition_penalty" and value <= 0):
                raise ValueError(f"{name}: must be a finite number{' > 0' if name == 'repetition_penalty' else ''}, "
                                 f"got {value!r}")
        ids = [("banned", token) for token in self.banned] + [("allowed", token) for token in self.allowed or ()]
        ids += [("logit_bias", pair[0] if isinstance(pair, tuple) and len(pair) == 2 else pair)
                for pair in self.logit_bias]
        for name, token in ids + ([("eos", self.eos)] if self.eos is not None else []):
            if isinstance(token, bool) or not isinstance(token, (int, np.integer)) or token < 0:
                raise ValueError(f"{name}: token ids must be integers >= 0, got {token!r}")
        if any(not isinstance(bias, real) or isinstance(bias, bool) or not np.isfinite(bias)
               for _, bias in self.logit_bias):
            raise ValueError(f"logit_bias: biases must be finite numbers, got {self.logit_bias!r}")
        if isinstance(self.min_tokens, bool) or not isinstance(self.min_tokens, (int, np.integer)) \
                or self.min_tokens < 0:
            raise ValueError(f"min_tokens: must be an integer >= 0, got {self.min_tokens!r}")
        if self.min_tokens and self.eos is None:
            raise ValueError("min_tokens: needs the eos id it holds back (eos=...)")

    @property
    def greedy(self) -> bool:
        """True at temperature 0 (the law is one-hot at the argmax)."""
        return self.temperature == 0

    @property
    def identity(self) -> bool:
        """True when the law is the model's own (T = 1, no other rule)."""
        return self.temperature == 1 and self.top_k is None and (self.top_p is None or self.top_p == 1) \
            and self.min_p is None and not self.adjusts_logits

    @property
    def adjusts_logits(self) -> bool:
        """True when a rule of the logit block (module doc) is on."""
        return bool(self.logit_bias or self.repetition_penalty != 1 or self.presence_penalty
                    or self.frequency_penalty or self.banned or self.allowed is not None or self.min_tokens)

    @property
    def uses_history(self) -> bool:
        """True when the law depends on the tokens generated before (penalties, min_tokens)."""
        return bool(self.repetition_penalty != 1 or self.presence_penalty or self.frequency_penalty
                    or self.min_tokens)

    @property
    def needs_logits(self) -> bool:
        """True when the law depends on the logits' sign, not only on their differences (repetition)."""
        return self.repetition_penalty != 1

    def claims(self) -> dict[str, object]:
        """The claimed parameters that differ from the identity, by name."""
        defaults = Processing()
        return {name: getattr(self, name) for name in CLAIMS if getattr(self, name) != getattr(defaults, name)}

    def describe(self) -> str:
        parts = [f"T = {self.temperature:g}"]
        if self.top_k is not None:
            parts.append(f"top-k {self.top_k}")
        if self.top_p is not None:
            parts.append(f"top-p {self.top_p:g}")
        for name, value in self.claims().items():
            if name not in ("temperature", "top_k", "top_p", "eos"):
                parts.append(f"{name} {value:g}" if isinstance(value, float) else f"{name} {value}")
        return ", ".join(parts)


CLAIMS = ("temperature", "top_k", "top_p", "min_p", "logit_bias", "repetition_penalty", "presence_penalty",
          "frequency_penalty", "banned", "allowed", "min_tokens", "eos")
"""The fields of ``Processing``, each a claim a sampler can make (``Processing.claims``)."""


def process_logits(logits: Array, processing: Processing, history: Sequence[int] = ()) -> Array:
    """The processed law (rows ``(..., V)``, the input's float dtype) of ``logits`` after ``history`` (module doc).
    ``ValueError`` naming the rule when an id is outside the vocabulary or the rules leave a row no token."""
    xp = namespace(logits)
    if processing.adjusts_logits:
        logits = adjust_logits(logits, processing, history)
    if processing.temperature == 0:
        return _one_hot(xp, logits)
    scaled = logits / processing.temperature
    top = xp.max(scaled, axis=-1, keepdims=True)
    with float_errors_allowed(logits):
        weights = xp.exp(scaled - top)
    probs = weights / xp.sum(weights, axis=-1, keepdims=True)
    vocab = probs.shape[-1]
    if processing.min_p is not None:
        probs = xp.where(probs >= processing.min_p * xp.max(probs, axis=-1, keepdims=True), probs,
                         xp.zeros_like(probs))
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


def adjust_logits(logits: Array, processing: Processing, history: Sequence[int] = ()) -> Array:
    """The logit block of the module doc: penalties over ``history``, ``logit_bias``, banned ids, ``allowed``,
    ``min_tokens``; rows ``(..., V)``."""
    xp = namespace(logits)
    vocab = logits.shape[-1]
    named = [("history", token) for token in history] + [("banned", token) for token in processing.banned]
    named += [("allowed", token) for token in processing.allowed or ()]
    named += [("logit_bias", token) for token, _ in processing.logit_bias]
    named += [("eos", processing.eos)] if processing.eos is not None else []
    for name, token in named:
        if not 0 <= int(token) < vocab:
            raise ValueError(f"{name}: token id {int(token)} is outside the vocabulary of {vocab}")
    counts = np.bincount(np.asarray(list(history), dtype=np.int64), minlength=vocab).astype(np.float64)
    shift = -processing.frequency_penalty * counts - processing.presence_penalty * (counts > 0)
    for token, bias in processing.logit_bias:
        shift[int(token)] += bias
    blocked = np.zeros(vocab, dtype=bool)
    blocked[list(processing.banned)] = True
    if processing.allowed is not None:
        blocked |= ~np.isin(np.arange(vocab), list(processing.allowed))
    if len(history) < processing.min_tokens:
        blocked[processing.eos] = True
    device = device_of(logits)
    z = logits
    if processing.repetition_penalty != 1:
        seen = xp.asarray(counts > 0, device=device)
        penalty = processing.repetition_penalty
        z = xp.where(seen & (z > 0), z / penalty, xp.where(seen, z * penalty, z))
    z = z + xp.asarray(shift, dtype=logits.dtype, device=device)
    z = xp.where(xp.asarray(blocked, device=device), xp.full_like(z, -float("inf")), z)
    if bool(xp.any(xp.all(z == -float("inf"), axis=-1))):
        raise ValueError("processing: banned ids, allowed and min_tokens exclude every token of positive "
                         "probability in a row")
    return z


def _one_hot(xp, logits: Array) -> Array:
    """One-hot rows at the argmax of ``logits`` (lowest id on ties)."""
    vocab = logits.shape[-1]
    index = xp.argmax(logits, axis=-1)[..., None]
    ids = xp.reshape(xp.arange(vocab, device=device_of(logits)), (1,) * (logits.ndim - 1) + (vocab,))
    return xp.astype(index == ids, logits.dtype)


def process_probs(probs: Array, processing: Processing, history: Sequence[int] = (), shift: float = 0.0) -> Array:
    """The processed law of probability rows ``probs`` (``(..., V)``): ``process_logits(log probs + shift)``
    (``shift`` matters to the repetition penalty only: the logits' sign)."""
    if processing.identity:
        return probs
    xp = namespace(probs)
    with float_errors_allowed(probs):
        logits = xp.log(probs) + shift
    return process_logits(logits, processing, history)
