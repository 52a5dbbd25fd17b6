"""The record every statistical audit returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum


class Verdict(str, Enum):
    """The outcome of an audit: ``PASS``, ``FAIL``, or ``UNTESTED`` (no degree of freedom, or too few values
    to have any power: nothing was tested, which no caller may read as a pass). A ``str`` enum, so it
    compares and serialises as its name."""

    PASS = "PASS"
    FAIL = "FAIL"
    UNTESTED = "UNTESTED"

    @classmethod
    def of(cls, passed: bool, tested: bool = True) -> Verdict:
        """``UNTESTED`` unless ``tested``, else ``PASS`` iff ``passed``."""
        return cls.UNTESTED if not tested else cls.PASS if passed else cls.FAIL


class NothingTested(ValueError):
    """An audit that tested nothing (its verdict is ``Verdict.UNTESTED``): the CLI prints the message as
    its one error line and exits 2, as for a usage error; the message says what was missing."""


@dataclass(frozen=True)
class AuditResult:
    """Outcome of one goodness-of-fit audit against the law it should follow.

    ``passed`` is the verdict at significance ``alpha`` (``pvalue >= alpha`` for one test; an audit
    combining several tests, like ``pit_audit``, splits ``alpha`` among them and says so). ``tv`` is the
    observed total-variation distance of the (binned) sample from the expected law and ``tv_upper``
    an upper confidence bound, at level ``1 - alpha``, on the true distance. ``min_detectable_tv`` is
    the smallest TV that the chi-square test detects with probability >= 0.9 at this ``alpha`` and
    ``n`` (for alternatives whose deviation survives the bin merging). ``tested`` False: the audit had
    no power at all (``verdict`` is ``Verdict.UNTESTED`` and ``passed`` is False; ``note`` says why).
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
    tested: bool = True

    def __post_init__(self) -> None:
        if self.passed and not self.tested:
            raise ValueError("passed: an audit that tested nothing cannot pass")

    @property
    def verdict(self) -> Verdict:
        return Verdict.of(self.passed, self.tested)

    def require_tested(self) -> AuditResult:
        """This result, or ``NothingTested`` (its note as the message) if it tested nothing."""
        if not self.tested:
            raise NothingTested(self.note or f"{self.test}: untested (no degree of freedom)")
        return self

    def to_dict(self) -> dict:
        return {**asdict(self), "verdict": self.verdict.value}
