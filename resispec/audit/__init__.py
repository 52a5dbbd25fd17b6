"""Audits of exactness: exact-law enumeration, sampling chi-square/TV, randomized-PIT streams, any sampler."""

from resispec.audit.counts import audit_counts
from resispec.audit.exact import EXACT_TOLERANCE, ExactLaw, exact_law
from resispec.audit.family import FAMILY_ALPHA, FamilyVerdict, bonferroni_level, family_verdict
from resispec.audit.goodness_of_fit import (
    ChiSquare,
    merged_chi_square,
    min_detectable_tv,
    total_variation,
    tv_upper_bound,
)
from resispec.audit.pit import pit_audit, randomized_pit
from resispec.audit.result import AuditResult, NothingTested, Verdict
from resispec.audit.sampler import SamplerError, SamplerReport, audit_sampler, zoo_sampler
from resispec.audit.sampling import DEFAULT_ALPHA, DEFAULT_SAMPLES, sample_audit

__all__ = ["EXACT_TOLERANCE", "DEFAULT_ALPHA", "DEFAULT_SAMPLES", "FAMILY_ALPHA", "AuditResult", "ChiSquare",
           "ExactLaw", "FamilyVerdict", "NothingTested", "SamplerError", "SamplerReport", "Verdict", "audit_counts",
           "audit_sampler", "bonferroni_level", "exact_law", "family_verdict", "merged_chi_square",
           "min_detectable_tv", "pit_audit", "randomized_pit", "sample_audit", "total_variation", "tv_upper_bound",
           "zoo_sampler"]
