"""Speed of one batched torch verify relative to one batched softmax over the same (B, V) tensor.

Pairs are LLM-like and peaky, per row: ``p = softmax(3 z)``, ``q = softmax(3 z + eps)`` with ``z``,
``eps`` standard normal, float32 probabilities (taken in float64, then cast: a float32 softmax over
49152 tokens misses 1 by up to ~2e-6, past ``SUM_TOLERANCE``, in about 40% of rows). Each verify gets
fresh candidates from the verifier's drafting rule (drafting not timed) and fresh float64 uniforms,
and includes input validation and the per-node plan (sort, schedule). The reference is
``torch.softmax`` of the float32 logits (B, V) along V, timed alternately with the verifier in the
same run (``resispec.benchmarks.timing.median_ratio``); on CUDA every timed call ends with a
synchronize. sps takes one candidate, so it runs at k = 1.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from resispec.benchmarks.timing import median_ratio
from resispec.benchmarks.verify_speed import LOGIT_SCALE, VerifyTiming
from resispec.engine.verifiers import get_torch_verifier
from resispec.verifiers import VERIFIERS


@dataclass(frozen=True)
class TorchVerifyTiming(VerifyTiming):
    """Median seconds of one batched verify of ``batch`` nodes on ``device`` and of one batched softmax."""

    device: str
    batch: int


def llm_like_batch(batch: int, vocab: int, generator: torch.Generator,
                   device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(logits, p, q)``, each float32 (B, V): peaky targets and noisy drafts."""
    logits = LOGIT_SCALE * torch.randn((batch, vocab), generator=generator, device=device)
    noise = torch.randn((batch, vocab), generator=generator, device=device)
    p, q = (torch.softmax(x.double(), dim=-1).float() for x in (logits, logits + noise))
    return logits, p, q


def _synchronized(run: Callable[[], object], device: torch.device) -> Callable[[], None]:
    """``run`` followed by a device synchronize where the device is asynchronous (CUDA)."""
    def timed() -> None:
        run()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    return timed


def bench_torch_verify(verifier_names: Sequence[str] | None, batch: int, vocabs: Sequence[int], ks: Sequence[int],
                       repeats: int = 25, seed: int = 0, device: str | torch.device = "cpu",
                       progress: Callable[[str], None] | None = None) -> list[TorchVerifyTiming]:
    """Median batched verify time / median batched softmax time per V, verifier (default: all) and k."""
    device = torch.device(device)
    generator = torch.Generator(device).manual_seed(seed)
    results = []
    for vocab in vocabs:
        logits, p, q = llm_like_batch(batch, vocab, generator, device)
        softmax = _synchronized(lambda: torch.softmax(logits, dim=-1), device)
        for name in verifier_names or list(VERIFIERS):
            verifier = get_torch_verifier(name)
            for count in dict.fromkeys(min(k, verifier.max_k or k) for k in ks):
                inputs = itertools.cycle([
                    (verifier.draft(q, count, generator),
                     torch.rand((batch, verifier.uniforms_needed(count)), dtype=torch.float64, device=device,
                                generator=generator))
                    for _ in range(repeats + 1)
                ])
                verify = _synchronized(lambda: verifier.verify(p, q, *next(inputs)), device)
                work, reference, ratio = median_ratio(verify, softmax, repeats)
                results.append(TorchVerifyTiming(name, vocab, count, work, reference, ratio, str(device), batch))
                if progress:
                    progress(f"V={vocab} {name} k={count} ({device}): {ratio:.2f}x softmax")
    return results
