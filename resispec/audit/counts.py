"""Goodness of fit of observed token counts against a law: the test every sampling audit ends in.

``audit_counts(counts, p, alpha)``: the merged chi-square (``goodness_of_fit``), the observed TV with its
upper confidence bound over the cells that are possible or observed, the detectable TV at power 0.9, and a
note counting the tokens observed where ``p = 0`` (each is impossible under the law: p-value 0).
"""

from __future__ import annotations

import numpy as np

from resispec.audit.goodness_of_fit import merged_chi_square, min_detectable_tv, total_variation, tv_upper_bound
from resispec.audit.result import AuditResult


def audit_counts(counts: np.ndarray, p: np.ndarray, alpha: float, test: str = "counts against p",
                 acceptance_rate: float | None = None) -> AuditResult:
    """Chi-square (sparse bins merged) and TV of ``counts`` (shape (m,), integers >= 0, total >= 1) against
    the law ``p`` (shape (m,)); ``passed`` iff the p-value is >= ``alpha``. ``ValueError`` naming the
    argument on bad input."""
    counts = np.asarray(counts)
    p = np.asarray(p, dtype=np.float64)
    if counts.ndim != 1 or p.shape != counts.shape:
        raise ValueError(f"counts: expected a 1-D array of the shape of p {p.shape}, got {counts.shape}")
    if counts.dtype.kind not in "iu" or (counts < 0).any() or counts.sum() < 1:
        raise ValueError("counts: expected non-negative integer counts with a positive total")
    if not (np.isfinite(p).all() and (p >= 0).all() and abs(p.sum() - 1.0) <= 1e-6):
        raise ValueError("p: expected a probability vector (finite, >= 0, summing to 1)")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha: expected a significance level in (0, 1), got {alpha}")
    n = int(counts.sum())
    chi = merged_chi_square(counts, p)
    tv = total_variation(counts, p)
    cells = int(np.count_nonzero((p > 0) | (counts > 0)))
    return AuditResult(
        test=test, n=n, alpha=alpha, passed=chi.pvalue >= alpha, pvalue=chi.pvalue, chi2=chi.statistic,
        chi2_df=chi.df, chi2_pvalue=chi.pvalue, tv=tv, tv_upper=tv_upper_bound(tv, n, cells, alpha),
        min_detectable_tv=min_detectable_tv(n, chi.df, alpha), acceptance_rate=acceptance_rate,
        note=f"{chi.impossible} token(s) emitted where p = 0" if chi.impossible else "",
    )
