"""Family-wise error over the tests of one audit (Bonferroni, as ``resispec audit`` judges its sampling audits).

With ``m`` tests each judged at ``family_alpha / m``, the chance that an exact sampler fails any of them by
bad luck is at most ``family_alpha``. A test without a degree of freedom (everything fell in one merged bin)
tested nothing: it is counted in ``m`` (conservative) but never counts as a pass, and a family in which no
test had a degree of freedom is *untested*, never passed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

FAMILY_ALPHA = 0.01
"""The default family-wise level (``resispec.audit.runner`` uses the same)."""


@dataclass(frozen=True)
class FamilyVerdict:
    """``level`` each test is judged at, which tests reject, which tested nothing, and the verdict."""

    tests: int
    level: float
    rejected: tuple[int, ...]
    untested: tuple[int, ...]

    @property
    def tested(self) -> bool:
        return len(self.untested) < self.tests

    @property
    def passed(self) -> bool:
        """True iff some test had a degree of freedom and none rejected."""
        return self.tested and not self.rejected


def bonferroni_level(tests: int, family_alpha: float = FAMILY_ALPHA) -> float:
    """``family_alpha / tests`` (``tests`` >= 1)."""
    if isinstance(tests, bool) or not isinstance(tests, int) or tests < 1:
        raise ValueError(f"tests: expected a count >= 1, got {tests!r}")
    if not 0 < family_alpha < 1:
        raise ValueError(f"family_alpha: expected a significance level in (0, 1), got {family_alpha}")
    return family_alpha / tests


def family_verdict(pvalues: Sequence[float], dfs: Sequence[int] | None = None,
                   family_alpha: float = FAMILY_ALPHA) -> FamilyVerdict:
    """Bonferroni over ``pvalues`` (one per test; ``dfs`` their degrees of freedom, 0 = tested nothing)."""
    dfs = [1] * len(pvalues) if dfs is None else list(dfs)
    if len(dfs) != len(pvalues):
        raise ValueError(f"dfs: expected one per p-value ({len(pvalues)}), got {len(dfs)}")
    level = bonferroni_level(len(pvalues), family_alpha)
    untested = tuple(i for i, df in enumerate(dfs) if df < 1)
    rejected = tuple(i for i, (pvalue, df) in enumerate(zip(pvalues, dfs)) if df >= 1 and not pvalue >= level)
    return FamilyVerdict(tests=len(pvalues), level=level, rejected=rejected, untested=untested)
