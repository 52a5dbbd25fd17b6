"""The ``resispec audit`` job: every verifier, on a suite of pairs, with both audits.

For each verifier and k, on each suite pair the drafting rule can serve: the exact law (enumeration)
and a sampling audit. Sampling audits are judged at a Bonferroni-corrected level:
``alpha = FAMILY_ALPHA / (number of sampling audits of exact verifiers)``, so the chance that any
exact verifier fails by bad luck is at most ``FAMILY_ALPHA``; controls are judged at the same level.

Power: each sampling audit states the TV from p its chi-square detects with power 0.9 at that level
(``AuditResult.min_detectable_tv``); a row's *detectable TV* is the largest over its pairs whose law has a
degree of freedom (a one-point law leaves only impossible tokens to see, which reject whatever n is). The job
promises to see a bias of ``PROMISED_TV`` on every such pair; a row whose sample cannot (too few samples) has
tested nothing by sampling.

Verdicts (``resispec.audit.Verdict`` for exact verifiers and for the job): an exact verifier's row is
``FAIL`` iff some exact-law error exceeds ``EXACT_TOLERANCE`` or some sampling audit rejects, else
``UNTESTED`` if its detectable TV exceeds ``PROMISED_TV`` (or no pair has a degree of freedom), else
``PASS``. A control is *caught* iff some sampling audit rejects it; *not caught* if it was not although its
exact bias on some pair reaches that pair's detectable TV; *too small to see* if its bias stays below the
detectable TV on every pair; *no bias here* if its exact law equals p on every audited pair. The job is
``FAIL`` if an exact row fails or a control is not caught, else ``UNTESTED`` if an exact row is untested or
a control is too small to see or has no bias at any k (``AuditReport.untested_controls``), else ``PASS``.

Nothing tested is an error, never a pass: a row whose every pair is skipped (k beyond the draft's
support for WOR/top-k drafting, or more candidate tuples than the exact enumeration visits,
``MAX_TUPLES``) is refused with a ``ValueError`` before any work.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from resispec.audit.exact import EXACT_TOLERANCE, bound_exact_law
from resispec.audit.family import FAMILY_ALPHA, bonferroni_level
from resispec.audit.result import Verdict
from resispec.audit.sampling import DEFAULT_SAMPLES, bound_sample_audit
from resispec.bounds import optimal_acceptance
from resispec.limits import MAX_TUPLES
from resispec.suite import SuitePair, get_suite
from resispec.validation import as_count
from resispec.verifiers import VERIFIERS, Verifier, get_verifier

DEFAULT_KS = (2, 4)
PROMISED_TV = 0.1  # the bias from p every sampling audit of the job must detect with power 0.9 (module doc)


@dataclass
class PairOutcome:
    """One verifier, one k, one pair."""

    pair: str
    exact_error: float
    exact_tv: float
    sampled_tv: float
    chi2_pvalue: float
    rejected: bool
    acceptance: float
    optimum: float
    detectable_tv: float  # NaN where the law has no degree of freedom (one point)


@dataclass
class AuditRow:
    """Aggregate over the suite for one verifier and one k."""

    verifier: str
    claims_exact: bool
    drafting: str
    k: int
    outcomes: list[PairOutcome] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def max_exact_error(self) -> float:
        return max((o.exact_error for o in self.outcomes), default=float("nan"))

    @property
    def max_sampled_tv(self) -> float:
        return max((o.sampled_tv for o in self.outcomes), default=float("nan"))

    @property
    def min_chi2_pvalue(self) -> float:
        return min((o.chi2_pvalue for o in self.outcomes), default=float("nan"))

    @property
    def detectable_tv(self) -> float:
        """The largest detectable TV over the pairs with a degree of freedom (NaN if none has one)."""
        return max((o.detectable_tv for o in self.outcomes if o.detectable_tv == o.detectable_tv),
                   default=float("nan"))

    @property
    def powered(self) -> bool:
        """Whether every sampling audit with a degree of freedom detects ``PROMISED_TV`` (and one has one)."""
        return self.detectable_tv <= PROMISED_TV

    @property
    def mean_acceptance(self) -> float:
        return float(np.mean([o.acceptance for o in self.outcomes])) if self.outcomes else float("nan")

    @property
    def mean_ratio_to_optimum(self) -> float:
        ratios = [o.acceptance / o.optimum for o in self.outcomes if o.optimum > 0]
        return float(np.mean(ratios)) if ratios else float("nan")

    @property
    def biased(self) -> bool:
        return any(o.exact_error > EXACT_TOLERANCE for o in self.outcomes)

    @property
    def caught(self) -> bool:
        return any(o.rejected for o in self.outcomes)

    @property
    def worst_pair(self) -> str:
        """Controls: the pair with the largest exact bias; exact verifiers: the smallest chi2 p-value."""
        if not self.outcomes:
            return ""
        if self.claims_exact:
            return min(self.outcomes, key=lambda o: o.chi2_pvalue).pair
        return max(self.outcomes, key=lambda o: o.exact_tv).pair

    @property
    def visible(self) -> bool:
        """Whether some pair's exact bias reaches what its sampling audit detects with power 0.9 (a pair with no
        degree of freedom states no such figure, so a bias there is not counted as visible)."""
        return any(o.exact_tv > EXACT_TOLERANCE and o.exact_tv >= o.detectable_tv for o in self.outcomes)

    @property
    def verdict(self) -> str:
        """An exact verifier's ``Verdict`` value, or a control's outcome (module doc)."""
        if self.claims_exact:
            return Verdict.of(not (self.biased or self.caught), self.biased or self.caught or self.powered).value
        if self.caught:
            return "caught"
        if not self.biased:
            return "no bias here"
        return "not caught" if self.visible else "too small to see"

    def to_dict(self) -> dict:
        record = {key: value for key, value in asdict(self).items() if key != "outcomes"}
        record.update(
            max_exact_error=self.max_exact_error, max_sampled_tv=self.max_sampled_tv,
            min_chi2_pvalue=self.min_chi2_pvalue, detectable_tv=self.detectable_tv,
            mean_acceptance=self.mean_acceptance,
            mean_ratio_to_iid_optimum=self.mean_ratio_to_optimum, worst_pair=self.worst_pair,
            verdict=self.verdict, pairs=[asdict(o) for o in self.outcomes],
        )
        return record


@dataclass
class AuditReport:
    """All rows, the significance used, and the overall verdict."""

    rows: list[AuditRow]
    alpha: float
    samples: int
    suite: str
    seed: int

    @property
    def verdict(self) -> Verdict:
        """The job's verdict (module doc); a control counts as caught if some k caught it."""
        by_control: dict[str, list[AuditRow]] = {}
        for row in self.rows:
            if not row.claims_exact:
                by_control.setdefault(row.verifier, []).append(row)
        missed = [rows for rows in by_control.values() if not any(r.caught for r in rows)]
        exact = {row.verdict for row in self.rows if row.claims_exact}
        if Verdict.FAIL.value in exact or any(any(r.visible for r in rows) for rows in missed):
            return Verdict.FAIL
        if Verdict.UNTESTED.value in exact or missed:
            return Verdict.UNTESTED
        return Verdict.PASS

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS

    @property
    def untested_controls(self) -> list[str]:
        """Controls with no bias on any audited pair at any k: the audit could not test whether it is caught."""
        controls = dict.fromkeys(row.verifier for row in self.rows if not row.claims_exact)
        return [name for name in controls
                if not any(row.biased for row in self.rows if row.verifier == name)]

    @property
    def untested(self) -> list[str]:
        """What the job could not test, one short phrase per kind: exact rows whose sample cannot see
        ``PROMISED_TV``, controls whose bias no sample here could see, controls with no bias at any k."""
        notes = []
        rows = [row for row in self.rows if row.verdict == Verdict.UNTESTED.value]
        if rows:
            worst = max((row.detectable_tv for row in rows), key=lambda tv: tv if tv == tv else np.inf)
            seen = "no degree of freedom" if worst != worst else f"detectable TV up to {worst:.2g}"
            notes.append(f"{len(rows)} exact row(s) cannot see a TV of {PROMISED_TV} ({seen})")
        controls = dict.fromkeys(row.verifier for row in self.rows if not row.claims_exact)
        hidden = [name for name in controls if name not in self.untested_controls
                  and all(row.verdict in ("too small to see", "no bias here")
                          for row in self.rows if row.verifier == name)]
        if hidden:
            notes.append(f"control(s) {', '.join(hidden)}: bias below what the sample detects on every pair")
        if self.untested_controls:
            notes.append(f"control(s) {', '.join(self.untested_controls)}: no bias on any audited pair")
        return notes

    def to_dict(self) -> dict:
        return {"suite": self.suite, "samples": self.samples, "seed": self.seed, "alpha": self.alpha,
                "family_alpha": FAMILY_ALPHA, "promised_tv": PROMISED_TV, "verdict": self.verdict.value,
                "passed": self.passed, "untested": self.untested, "untested_controls": self.untested_controls,
                "rows": [row.to_dict() for row in self.rows]}


def _ks_for(verifier: Verifier, ks: Sequence[int]) -> list[int]:
    if verifier.max_k is None:
        return list(ks)
    allowed = [k for k in ks if k <= verifier.max_k]
    return allowed or [verifier.max_k]


def _auditable(verifier: Verifier, k: int, pair: SuitePair) -> bool:
    """Whether the drafting rule can serve k candidates on the pair and the exact law can be enumerated."""
    limit = verifier.scheme.max_candidates(pair.q)
    return (limit is None or k <= limit) and verifier.scheme.tuple_count(pair.q, k) <= MAX_TUPLES


def _plan(verifiers: Sequence[Verifier], ks: Sequence[int], pairs: Sequence[SuitePair], suite: str):
    """(verifier, k, usable pairs, skipped pair names) for each row; ``ValueError`` naming every row
    with no usable pair (it would test nothing)."""
    plan, empty = [], []
    for verifier in verifiers:
        for k in _ks_for(verifier, ks):
            usable = [pair for pair in pairs if _auditable(verifier, k, pair)]
            skipped = [pair.name for pair in pairs if pair not in usable]
            plan.append((verifier, k, usable, skipped))
            if not usable:
                empty.append(f"{verifier.name} k={k}")
    if empty:
        raise ValueError(
            f"k: nothing to audit for {', '.join(empty)}: no pair of suite {suite!r} serves k candidates "
            f"(WOR and top-k drafting need k <= the draft's support) within the exact enumeration's "
            f"{MAX_TUPLES} tuples (resispec.limits.MAX_TUPLES); use a smaller k or another suite")
    return plan


def _audit_seed(seed: int, verifier: str, k: int, pair: str) -> list[int]:
    """A seed per (verifier, k, pair), independent of which other rows the run audits."""
    return [seed, zlib.crc32(f"{verifier}|{k}|{pair}".encode())]


def run_audit(verifier_names: Sequence[str] | None = None, ks: Sequence[int] = DEFAULT_KS,
              suite: str = "standard", samples: int = DEFAULT_SAMPLES, seed: int = 0,
              progress: Callable[[str], None] | None = None) -> AuditReport:
    """Audit the named verifiers (default: all) on a suite; see the module docstring."""
    verifiers = [get_verifier(name) for name in (verifier_names or list(VERIFIERS))]
    pairs = get_suite(suite)
    plan = _plan(verifiers, [as_count(k) for k in ks], pairs, suite)
    exact_audits = sum(len(usable) for verifier, _, usable, _ in plan if verifier.claims_exact)
    alpha = bonferroni_level(max(exact_audits, 1), FAMILY_ALPHA)
    rows = []
    for row_index, (verifier, k, usable, skipped) in enumerate(plan):
        row = AuditRow(verifier.name, verifier.claims_exact, verifier.drafting, k, skipped=skipped)
        for pair in usable:
            bound = verifier.bind(pair.p, pair.q, k)  # one plan for both audits
            law = bound_exact_law(bound)
            result = bound_sample_audit(bound, n=samples, seed=_audit_seed(seed, verifier.name, k, pair.name),
                                        alpha=alpha)
            row.outcomes.append(PairOutcome(
                pair=pair.name, exact_error=law.max_error, exact_tv=law.tv, sampled_tv=result.tv,
                chi2_pvalue=result.chi2_pvalue, rejected=not result.passed, acceptance=law.acceptance,
                optimum=optimal_acceptance(pair.p, pair.q, k), detectable_tv=result.min_detectable_tv,
            ))
        rows.append(row)
        if progress:
            progress(f"[{row_index + 1}/{len(plan)}] {verifier.name} k={k}: {row.verdict}")
    return AuditReport(rows=rows, alpha=alpha, samples=samples, suite=suite, seed=seed)
