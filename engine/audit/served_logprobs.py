"""Served logprobs: a stream that carries the engine's own logprob of every token is checked against the target
before the audit certifies anything.

Engines serve logprobs that were wrong under speculation (vLLM: vllm-project/vllm#30846, #33391; llama.cpp: right
for the first token only, ggml-org/llama.cpp PR #27196, or 0.0 everywhere, #27972); a stream audit that trusted them
would certify garbage, and a user who reads them would be misled by a PASS. For every token with a served value
``l_t`` the audit has the target's ``log p_t(y_t)`` from teacher forcing, both of the raw target (what vLLM serves by
default) and of the processed law (``logprobs_mode`` processed); a sequence's served values agree with the kind that
fits them better. The stream's verdict is ``UNTESTED`` with the reason when

- a token's served logprob is null (``None``);
- every served value is the same while the target's differ by more than the tolerance (constant logprobs: 0.0
  everywhere);
- a served value differs from the target's by more than ``LOGPROB_TOLERANCE`` nats.

The tolerance covers numerics (a served model in another precision or quantization than the audit's target), measured
on this engine's own rows (``scripts/served_logprob_tolerance.py``, docs/audit_stream.md "Served logprobs"): the
built-in target's float32 and native (4-bit GGUF blocks, q8_0 head) computations, teacher-forced on text sampled at
T = 1 after the held-out prompts, differ at an emitted token by a median 0.018-0.019 nats, 99.9th percentile
0.17-0.18 and at most 0.25 nats over 1,920 tokens (two seeds of 960; 2026-12-07, Xeon with AVX-512).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

LOGPROB_TOLERANCE = 0.5
"""Nats a served logprob may differ from the target's before the stream is not certified: 2x the largest float32 vs
4-bit gap measured (0.25 nats; about 3x the 99.9th percentile, module doc), a margin for longer streams (the largest gap
grows with the tokens compared) and other quantizations. What it must not excuse is not numerics: a logprob read from
another position or another model, or a constant (caught apart)."""


@dataclass
class ServedLogprobs:
    """What the served logprobs of a stream showed: tokens compared, nulls, the largest disagreement and where."""

    tokens: int = 0
    nulls: int = 0
    served: list[float] = field(default_factory=list)
    reference: list[float] = field(default_factory=list)
    worst: float = 0.0
    worst_at: str = ""

    def add(self, served: tuple[float | None, ...], raw: np.ndarray, processed: np.ndarray, where: str) -> None:
        """One sequence's served values against the target's raw and processed ``log p_t(y_t)`` ((n,) each)."""
        values = [np.nan if value is None else float(value) for value in served]
        self.nulls += sum(value is None for value in served)
        known = ~np.isnan(np.asarray(values, dtype=float))
        if not known.any():
            return
        given = np.asarray(values, dtype=float)[known]
        gaps = {kind: np.abs(given - reference[known]) for kind, reference in (("raw", raw), ("processed", processed))}
        kind = min(gaps, key=lambda name: float(np.nanmax(np.where(np.isfinite(gaps[name]), gaps[name], np.inf))))
        reference = (raw if kind == "raw" else processed)[known]
        self.tokens += int(known.sum())
        self.served.extend(given.tolist())
        self.reference.extend(reference.tolist())
        gap = np.abs(given - reference)
        gap = np.where(np.isfinite(gap), gap, np.inf)
        if float(gap.max()) > self.worst:
            self.worst = float(gap.max())
            self.worst_at = f"{where}, token {int(np.flatnonzero(known)[int(gap.argmax())])} ({kind} law)"

    @property
    def problem(self) -> str | None:
        """Why the stream cannot be certified, or None (module doc)."""
        if self.nulls:
            return f"served logprobs: {self.nulls} token(s) with a null logprob"
        if self.tokens >= 2 and len(set(self.served)) == 1 and np.ptp(self.reference) > LOGPROB_TOLERANCE:
            return (f"served logprobs: constant ({self.served[0]:g} at all {self.tokens} tokens) where the target's "
                    f"range over {np.ptp(self.reference):.2f} nats")
        if self.worst > LOGPROB_TOLERANCE:
            return (f"served logprobs disagree with the target: |difference| {self.worst:.3g} nats at "
                    f"{self.worst_at} (tolerance {LOGPROB_TOLERANCE:g})")
        return None

    def to_dict(self) -> dict:
        return {"tokens": self.tokens, "nulls": self.nulls, "max_difference": self.worst if self.tokens else None,
                "tolerance": LOGPROB_TOLERANCE, "problem": self.problem}
