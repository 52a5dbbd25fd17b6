"""Sampling audit: run draft + verify n times and test the emitted tokens against p."""

from __future__ import annotations

import numpy as np

from resispec.audit.exact import resolve
from resispec.audit.goodness_of_fit import merged_chi_square, min_detectable_tv, total_variation, tv_upper_bound
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
    chi = merged_chi_square(counts, bound.p)
    tv = total_variation(counts, bound.p)
    cells = int(np.count_nonzero((bound.p > 0) | (counts > 0)))
    return AuditResult(
        test=f"sample audit of {bound.verifier.name}, k = {bound.k}",
        n=n,
        alpha=alpha,
        passed=chi.pvalue >= alpha,
        pvalue=chi.pvalue,
        chi2=chi.statistic,
        chi2_df=chi.df,
        chi2_pvalue=chi.pvalue,
        tv=tv,
        tv_upper=tv_upper_bound(tv, n, cells, alpha),
        min_detectable_tv=min_detectable_tv(n, chi.df, alpha),
        acceptance_rate=accepted / n,
        note=f"{chi.impossible} token(s) emitted where p = 0" if chi.impossible else "",
    )
