"""Sampling audit: run draft + verify n times and test the emitted tokens against p."""

from __future__ import annotations

import numpy as np

from resispec.audit.counts import audit_counts
from resispec.audit.exact import resolve
from resispec.audit.result import AuditResult
from resispec.validation import as_count
from resispec.verifiers import BoundVerifier, Verifier

DEFAULT_SAMPLES = 6000
DEFAULT_ALPHA = 1e-3


def sample_audit(verifier: Verifier | str, p: np.ndarray, q: np.ndarray, k: int,
                 n: int = DEFAULT_SAMPLES, seed: int | np.random.SeedSequence | list[int] = 0,
                 alpha: float = DEFAULT_ALPHA) -> AuditResult:
    """Chi-square (sparse bins merged) and TV of n emitted tokens against p; passed iff p-value >= alpha.

    Each sample drafts k candidates with the verifier's drafting rule and verifies them with fresh
    uniforms, all from ``numpy.random.default_rng(seed)`` in that order; the n verifications run as rows
    of one batched call (``BoundVerifier.draft_and_verify``).
    """
    return bound_sample_audit(resolve(verifier).bind(p, q, k), n, seed, alpha)


def bound_sample_audit(bound: BoundVerifier, n: int = DEFAULT_SAMPLES,
                       seed: int | np.random.SeedSequence | list[int] = 0,
                       alpha: float = DEFAULT_ALPHA) -> AuditResult:
    """``sample_audit`` of a verifier already bound to ``(p, q, k)`` (its plan computed once, shared)."""
    n = as_count(n, "n", "samples")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha: expected a significance level in (0, 1), got {alpha}")
    tokens, index = bound.draft_and_verify(n, np.random.default_rng(seed))
    counts = np.bincount(tokens, minlength=bound.p.size)
    accepted = int(np.count_nonzero(index >= 0))
    return audit_counts(counts, bound.p, alpha, test=f"sample audit of {bound.verifier.name}, k = {bound.k}",
                        acceptance_rate=accepted / n)
