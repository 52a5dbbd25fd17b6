"""Audits of exactness: exact-law enumeration, sampling chi-square/TV, randomized-PIT streams."""

from resispec.audit.exact import EXACT_TOLERANCE, ExactLaw, exact_law
from resispec.audit.pit import pit_audit, randomized_pit
from resispec.audit.result import AuditResult, NothingTested, Verdict
from resispec.audit.sampling import DEFAULT_ALPHA, DEFAULT_SAMPLES, sample_audit

__all__ = ["EXACT_TOLERANCE", "DEFAULT_ALPHA", "DEFAULT_SAMPLES", "AuditResult", "ExactLaw", "NothingTested", "Verdict",
           "exact_law", "pit_audit", "randomized_pit", "sample_audit"]
