"""Speed of one ``verify`` call (validation and schedule included) relative to one softmax.

Pairs are LLM-like and peaky: ``p = softmax(3 z)``, ``q = softmax(3 z + eps)`` with ``z, eps``
standard normal of length V. Each verify gets fresh candidates from the verifier's drafting rule
and fresh uniforms (drafting is not timed). The reference is ``scipy.special.softmax`` on a
length-V float64 vector, timed alternately with the verifier in the same run.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from resispec.benchmarks.timing import median_ratio
from resispec.verifiers import VERIFIERS, get_verifier

DEFAULT_VOCABS = (1024, 49152, 151936)
DEFAULT_KS = (2, 4, 8)
LOGIT_SCALE = 3.0
SLOW_PLANS = {"pooled_wor": 49152}
"""Verifiers whose plan is a sequential scan over the vocabulary (tenths of a second at V = 49152,
about 2000x a softmax), with the largest V the default run (no ``verifier_names``) times them at;
named explicitly they run at every V. They get at most ``SLOW_REPEATS`` timed calls per cell."""
SLOW_REPEATS = 3


@dataclass(frozen=True)
class VerifyTiming:
    verifier: str
    vocab: int
    k: int
    verify_seconds: float
    softmax_seconds: float
    ratio: float

    def to_dict(self) -> dict:
        return asdict(self)


def llm_like_pair(vocab: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(logits, p, q)``: peaky target and a noisy draft over ``vocab`` tokens."""
    logits = LOGIT_SCALE * rng.standard_normal(vocab)
    from scipy.special import softmax  # deferred: see the resispec package doc

    return logits, softmax(logits), softmax(logits + rng.standard_normal(vocab))


def skipped_by_default(name: str, vocab: int) -> bool:
    """Whether a default run (no ``verifier_names``) leaves verifier ``name`` out at ``vocab``."""
    return vocab > SLOW_PLANS.get(name, vocab)


def bench_verify(verifier_names: Sequence[str] | None = None, vocabs: Sequence[int] = DEFAULT_VOCABS,
                 ks: Sequence[int] = DEFAULT_KS, repeats: int = 25, seed: int = 0,
                 progress: Callable[[str], None] | None = None) -> list[VerifyTiming]:
    """Median verify time / median softmax time for each exact verifier, V and k."""
    from scipy.special import softmax  # deferred: see the resispec package doc

    explicit = verifier_names is not None
    names = verifier_names or [name for name, cls in VERIFIERS.items() if cls.claims_exact]
    rng = np.random.default_rng(seed)
    results = []
    for vocab in vocabs:
        logits, p, q = llm_like_pair(vocab, rng)
        for name in names:
            verifier = get_verifier(name)
            if not explicit and skipped_by_default(name, vocab):
                continue
            calls = min(repeats, SLOW_REPEATS) if name in SLOW_PLANS else repeats
            for k in ks:
                if verifier.max_k is not None and k > verifier.max_k:
                    continue
                inputs = itertools.cycle([(verifier.draft(q, k, rng), rng.random(verifier.uniforms_needed(k)))
                                          for _ in range(calls + 1)])

                def one_verify() -> None:
                    verifier.verify(p, q, *next(inputs))

                work, ref, ratio = median_ratio(one_verify, lambda: softmax(logits), calls)
                results.append(VerifyTiming(name, vocab, k, work, ref, ratio))
                if progress:
                    progress(f"V={vocab} {name} k={k}: {ratio:.2f}x softmax")
    return results
