"""Chi-square goodness of fit with sparse bins merged, TV estimates and detection power.

- Bins whose expected count is below ``MIN_EXPECTED`` are pooled; a pool still below it joins the
  smallest regular bin. ``chi2 = sum (O - E)^2 / E`` on ``bins - 1`` degrees of freedom.
- A count in a cell of expected probability 0 is impossible under the null: p-value 0.
- ``tv = 1/2 sum |O/n - e|``; the upper bound uses the L1 deviation inequality of Weissman et al.
  (2003), ``P(||e_hat - e||_1 >= eps) <= (2^m - 2) exp(-n eps^2 / 2)`` over m cells, so with
  probability ``>= 1 - alpha`` the true TV is at most ``tv + eps/2``.
- Power: against an alternative at chi-square distance ``chi^2(e'||e)`` the statistic is
  approximately noncentral chi-square with ``lambda = n chi^2``; since ``chi^2 >= 4 TV^2``, every
  alternative with ``TV >= sqrt(lambda_0 / (4 n))`` is detected with power >= 0.9, where
  ``lambda_0`` solves ``P(ncx2(df, lambda_0) > crit) = 0.9``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_EXPECTED = 5.0
POWER = 0.9


@dataclass(frozen=True)
class ChiSquare:
    statistic: float
    df: int
    pvalue: float
    impossible: int


def merged_chi_square(counts: np.ndarray, expected_probability: np.ndarray) -> ChiSquare:
    """Chi-square of ``counts`` (shape (m,)) against ``expected_probability`` with sparse bins merged."""
    n = counts.sum()
    impossible = int(counts[expected_probability <= 0].sum())
    live = expected_probability > 0
    observed, expected = counts[live].astype(float), n * expected_probability[live]
    sparse = expected < MIN_EXPECTED
    bins_observed = list(observed[~sparse])
    bins_expected = list(expected[~sparse])
    if sparse.any():
        pooled_observed, pooled_expected = observed[sparse].sum(), expected[sparse].sum()
        if pooled_expected < MIN_EXPECTED and bins_expected:
            smallest = int(np.argmin(bins_expected))
            bins_observed[smallest] += pooled_observed
            bins_expected[smallest] += pooled_expected
        else:
            bins_observed.append(pooled_observed)
            bins_expected.append(pooled_expected)
    observed_bins, expected_bins = np.array(bins_observed), np.array(bins_expected)
    df = max(observed_bins.size - 1, 0)
    statistic = float(((observed_bins - expected_bins) ** 2 / expected_bins).sum()) if df else 0.0
    from scipy import stats  # deferred: see the resispec package doc

    pvalue = float(stats.chi2.sf(statistic, df)) if df else 1.0
    if impossible:
        pvalue = 0.0
    return ChiSquare(statistic=statistic, df=df, pvalue=pvalue, impossible=impossible)


def total_variation(counts: np.ndarray, expected_probability: np.ndarray) -> float:
    """``1/2 sum |counts/n - expected|``."""
    return 0.5 * float(np.abs(counts / counts.sum() - expected_probability).sum())


def tv_upper_bound(tv: float, n: int, cells: int, alpha: float) -> float:
    """``tv + eps/2`` with ``eps = sqrt(2 (ln(2^m - 2) + ln(1/alpha)) / n)`` (capped at 1)."""
    if cells < 2:
        return min(tv, 1.0)
    log_sets = cells * np.log(2.0) + np.log1p(-2.0 ** (1 - cells))
    eps = np.sqrt(2.0 * (log_sets + np.log(1.0 / alpha)) / n)
    return float(min(tv + eps / 2.0, 1.0))


def min_detectable_tv(n: int, df: int, alpha: float, power: float = POWER) -> float:
    """Smallest TV detected with probability ``power`` by the chi-square test (see module doc)."""
    if df < 1:
        return float("nan")
    from scipy import optimize, stats

    critical = stats.chi2.isf(alpha, df)
    lam = optimize.brentq(lambda x: stats.ncx2.sf(critical, df, x) - power, 1e-9, 1e6)
    return float(np.sqrt(lam / (4.0 * n)))
