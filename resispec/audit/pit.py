"""Audit of a stream of randomized-PIT values from live decoding.

Under exactness, ``u = P_p(token < y) + U p(y)`` (U uniform, independent) is Uniform(0, 1) and
independent across positions, whatever the distributions at each position. The audit runs a
Kolmogorov-Smirnov test and a chi-square test on equal-width bins, and passes iff both p-values
are at least ``alpha / 2`` (Bonferroni over the two tests).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from resispec.audit.goodness_of_fit import (
    MIN_EXPECTED,
    merged_chi_square,
    min_detectable_tv,
    total_variation,
    tv_upper_bound,
)
from resispec.audit.result import AuditResult
from resispec.audit.sampling import DEFAULT_ALPHA
from resispec.validation import as_reals

MAX_BINS = 20
MIN_TESTED_VALUES = 2 * int(MIN_EXPECTED)
"""The fewest values with power: two bins of ``MIN_EXPECTED`` expected values each (one degree of freedom)."""


def randomized_pit(p: np.ndarray, token: int, u: float) -> float:
    """``(P_p(Y < token) + u p(token)) / P_p(Y <= V - 1)`` for target ``p`` (shape (V,)) and an independent
    uniform u: the PIT of p normalised by its own computed total.

    A row from a float32 softmax sums to 1 only within rounding (1.0000003, say), so the unnormalised
    ``P_p(Y < token)`` of a last-in-order token of tiny p would exceed 1. With ``below``, ``p(token)`` and
    ``above`` summed apart, the numerator ``below + u p(token)`` is at most the denominator ``(below +
    p(token)) + above`` in floating point too (rounding is monotone), so the value lies in [0, 1] for any
    magnitudes (tokens of p down to 1e-300 and 0 included).

    ``ValueError`` unless ``token`` is an integer id in ``[0, V)`` and ``u`` a number in ``[0, 1)``
    (a negative id would silently index from the end).
    """
    size = np.shape(p)[0] if np.ndim(p) == 1 else -1
    if size < 1:
        raise ValueError(f"p: expected a 1-D probability vector, got shape {np.shape(p)}")
    if isinstance(token, (bool, np.bool_)) or not isinstance(token, (int, np.integer)) or not 0 <= token < size:
        raise ValueError(f"token: expected an integer id in [0, {size}), got {token!r}")
    if isinstance(u, (bool, np.bool_)) or not isinstance(u, (int, float, np.integer, np.floating)) or not 0 <= u < 1:
        raise ValueError(f"u: expected a uniform in [0, 1), got {u!r}")
    below, mass, above = float(np.sum(p[:token])), float(p[token]), float(np.sum(p[token + 1:]))
    total = below + mass + above
    if not total > 0:
        raise ValueError(f"p: expected a probability vector with positive total mass, got total {total!r}")
    return (below + u * mass) / total


def pit_audit(values: Sequence[float] | np.ndarray, alpha: float = DEFAULT_ALPHA) -> AuditResult:
    """Uniformity audit (KS + binned chi-square) of randomized-PIT values.

    Fewer than ``MIN_TESTED_VALUES`` values leave the chi-square no degree of freedom (every bin's
    expected count is below ``MIN_EXPECTED`` and they merge into one): the result's verdict is then
    ``Verdict.UNTESTED`` (``passed`` False, ``min_detectable_tv`` NaN), never a pass.
    """
    array = as_reals(values, "values")
    if array.ndim != 1 or array.size < 2:
        raise ValueError(f"values: expected a 1-D stream of at least 2 PIT values, got shape {array.shape}")
    bad = ~(np.isfinite(array) & (array >= 0.0) & (array <= 1.0))
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        raise ValueError(f"values: entry {index} is {array[index]!r}; PIT values lie in [0, 1]")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha: expected a significance level in (0, 1), got {alpha}")
    n = array.size
    bins = int(min(MAX_BINS, max(2, n // 5)))
    counts = np.bincount(np.minimum((array * bins).astype(np.int64), bins - 1), minlength=bins)
    expected = np.full(bins, 1.0 / bins)
    chi = merged_chi_square(counts, expected)
    from scipy import stats  # deferred: see the resispec package doc

    ks_pvalue = float(stats.kstest(array, "uniform").pvalue)
    tv = total_variation(counts, expected)
    pvalue = min(chi.pvalue, ks_pvalue)
    tested = chi.df >= 1
    return AuditResult(
        test=f"randomized-PIT uniformity ({bins} bins + KS)",
        n=n,
        alpha=alpha,
        passed=tested and pvalue >= alpha / 2.0,
        pvalue=pvalue,
        chi2=chi.statistic,
        chi2_df=chi.df,
        chi2_pvalue=chi.pvalue,
        tv=tv,
        tv_upper=tv_upper_bound(tv, n, bins, alpha),
        min_detectable_tv=min_detectable_tv(n, chi.df, alpha / 2.0),
        ks_pvalue=ks_pvalue,
        tested=tested,
        note="" if tested else (f"untested: {n} PIT values leave the chi-square no degree of freedom; at least "
                                f"{MIN_TESTED_VALUES} are needed to detect any bias"),
    )
