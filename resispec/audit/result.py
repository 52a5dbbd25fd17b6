"""The record every statistical audit returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class AuditResult:
    """Outcome of one goodness-of-fit audit against the law it should follow.

    ``passed`` is the verdict at significance ``alpha`` (``pvalue >= alpha`` for one test; an audit
    combining several tests, like ``pit_audit``, splits ``alpha`` among them and says so). ``tv`` is the
    observed total-variation distance of the (binned) sample from the expected law and ``tv_upper``
    an upper confidence bound, at level ``1 - alpha``, on the true distance. ``min_detectable_tv`` is
    the smallest TV that the chi-square test detects with probability >= 0.9 at this ``alpha`` and
    ``n`` (for alternatives whose deviation survives the bin merging).
    """

    test: str
    n: int
    alpha: float
    passed: bool
    pvalue: float
    chi2: float
    chi2_df: int
    chi2_pvalue: float
    tv: float
    tv_upper: float
    min_detectable_tv: float
    ks_pvalue: float | None = None
    acceptance_rate: float | None = None
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)
