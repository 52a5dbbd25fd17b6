"""Estimates with 95 % confidence intervals over pairs: means and pooled ratios.

Pairs are independent draws from their source (Monte Carlo noise inside a pair is independent too),
so the spread across pairs gives one interval that covers both the choice of pairs and any Monte
Carlo noise. Normal intervals: ``mean +- 1.96 s / sqrt(N)``; a pooled ratio ``sum a / sum b`` by the
delta method, ``se^2 = sum (a_n - ratio b_n)^2 / (sum b)^2 * N / (N - 1)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054
"""Two-sided 95 % normal quantile."""


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a 95 % confidence interval ``[low, high]``."""

    value: float
    low: float
    high: float

    @property
    def half_width(self) -> float:
        return 0.5 * (self.high - self.low)

    def to_list(self) -> list[float]:
        return [self.low, self.high]


def standard_error(values: np.ndarray) -> float:
    """Standard error of the mean, ``sd / sqrt(N)`` (sample sd, ddof 1), of ``values`` (shape (N,)); 0 for N = 1."""
    values = np.asarray(values)
    return float(np.std(values, ddof=1) / np.sqrt(values.size)) if values.size > 1 else 0.0


def mean_estimate(values: np.ndarray) -> Estimate:
    """Mean of ``values`` (shape (N,)) with a normal 95 % interval (zero width for N = 1)."""
    mean = float(np.mean(values))
    se = standard_error(values)
    return Estimate(mean, mean - Z95 * se, mean + Z95 * se)


def ratio_estimate(numerators: np.ndarray, denominators: np.ndarray) -> Estimate:
    """Pooled ratio ``sum a / sum b`` over pairs (shape (N,) each) with a delta-method 95 % interval;
    NaN where ``sum b = 0``."""
    total = float(np.sum(denominators))
    if not total > 0:
        return Estimate(float("nan"), float("nan"), float("nan"))
    ratio = float(np.sum(numerators)) / total
    size = numerators.size
    residual = numerators - ratio * denominators
    se = float(np.sqrt(np.sum(residual**2) * size / (size - 1)) / total) if size > 1 else 0.0
    return Estimate(ratio, ratio - Z95 * se, ratio + Z95 * se)
