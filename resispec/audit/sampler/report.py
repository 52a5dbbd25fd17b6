"""The report of a sampler audit: every test with what it could see, the coverage, the contract, the edges.

Verdict: ``PASS`` iff some test had a degree of freedom, no test rejects at the family's Bonferroni level
(``resispec.audit.family``), the output contract holds on every row, and no edge probe broke it;
``FAIL`` otherwise; ``UNTESTED`` (never a pass) when no test had a degree of freedom and nothing was
rejected: ``resispec.audit.Verdict``, the one vocabulary of every audit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from resispec.audit.result import AuditResult, Verdict
from resispec.audit.sampler.checks import ContractLog


def _figure(value: float, spec: str) -> str:
    width = int(spec.split(".")[0])
    return f"{'-':>{width}}" if value is None or value != value else format(value, spec)


def describe_result(result: AuditResult) -> str:
    """n, df, p-value, TV, its upper bound and the detectable TV as fixed-width columns ("-": not defined)."""
    return (f"{result.n:>6}  {result.chi2_df:>4}  {_figure(result.pvalue, '8.2g')}  {_figure(result.tv, '6.3f')}  "
            f"{_figure(result.tv_upper, '6.3f')}  {_figure(result.min_detectable_tv, '7.3f')}")


@dataclass
class SamplerTest:
    """One test of the family: its name, the context (pair, model or batch group), its dimension (``law``,
    ``acceptance``, ``batch``) and its result, judged at the family's level."""

    name: str
    context: str
    dimension: str
    result: AuditResult

    @property
    def rejected(self) -> bool:
        """The test's own verdict at the family's level (a PIT test splits it between KS and chi-square; a token
        where the law has p = 0 rejects whatever the degrees of freedom; a result that tested nothing,
        ``Verdict.UNTESTED``, rejects nothing)."""
        return self.result.tested and not self.result.passed

    @property
    def tested(self) -> bool:
        """Whether the test could see anything: a degree of freedom, or a rejection."""
        return self.result.tested and (self.result.chi2_df >= 1 or self.rejected)

    def to_dict(self) -> dict:
        record = self.result.to_dict()
        record.update(test=f"{self.name}, {self.context}", name=self.name, context=self.context,
                      dimension=self.dimension, tested=self.tested,
                      rejected=self.rejected, detectable_tv=self.result.min_detectable_tv)
        return record


NOT_REACHABLE = ("not reachable: the probe forced no draw. It forces torch's rand, rand_like, uniform_, exponential_ "
                 "and multinomial; NumPy's module functions, every default_rng() made during the call, the rng extra "
                 "and the generators in the sampler's module globals, closure, defaults or partial arguments "
                 "(resispec.audit.sampler.reach); a generator elsewhere (another module, an object's attribute) "
                 "or a draw by another function is not reached, so no edge was tested")


@dataclass
class EdgeOutcome:
    """One edge value: the functions whose draws were forced (calls), those reached but not forced, and the
    contract on the probe rows under it."""

    edge: str
    forced: dict[str, int]
    unforced: dict[str, int]
    contract: ContractLog
    likelihood: str = ""
    """How often the sampler's dtype draws the forced value (``edges.edge_likelihood``)."""

    @property
    def reached(self) -> bool:
        return sum(self.forced.values()) > 0

    def to_dict(self) -> dict:
        return {"edge": self.edge, "likelihood": self.likelihood, "reached": self.reached, "forced": self.forced,
                "unforced": self.unforced, **self.contract.to_dict()}


@dataclass
class SamplerReport:
    """Everything ``audit_sampler`` found (module doc)."""

    contract: str
    level: str
    samples: int
    seed: int
    family_alpha: float
    level_alpha: float
    tests: list[SamplerTest]
    output: ContractLog
    coverage: dict
    edges: list[EdgeOutcome] = field(default_factory=list)
    rule: str | None = None
    skipped: list[str] = field(default_factory=list)
    parameters: dict[str, str] = field(default_factory=dict)
    """A verdict line per claimed processing parameter (``parameters``)."""
    row_parameters: dict[str, str] = field(default_factory=dict)
    """With mixed per-row parameters: a verdict line per parameter a row may read from another
    (``parameters.row_parameter_verdicts``)."""

    @property
    def rejected_tests(self) -> list[SamplerTest]:
        return [test for test in self.tests if test.rejected]

    @property
    def edge_violations(self) -> list[EdgeOutcome]:
        return [edge for edge in self.edges if not edge.contract.clean]

    @property
    def tested(self) -> bool:
        return any(test.tested for test in self.tests)

    @property
    def edges_tested(self) -> bool | None:
        """Whether an edge probe forced a draw (None: no probe asked for). A probe that forced nothing tested no
        edge: its clean output shows nothing, and the verdict line says so."""
        return any(edge.reached for edge in self.edges) if self.edges else None

    @property
    def verdict(self) -> Verdict:
        failed = bool(self.rejected_tests or not self.output.clean or self.edge_violations)
        return Verdict.of(not failed, failed or self.tested)

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS

    def to_dict(self) -> dict:
        return {"contract": self.contract, "level": self.level, "rule": self.rule, "samples": self.samples,
                "seed": self.seed, "family_alpha": self.family_alpha, "alpha_per_test": self.level_alpha,
                "verdict": self.verdict.value, "passed": self.passed,
                "rejected": [f"{t.name}, {t.context}" for t in self.rejected_tests],
                "output_contract": self.output.to_dict(), "coverage": self.coverage,
                "tests": [test.to_dict() for test in self.tests], "edges": [e.to_dict() for e in self.edges],
                "edges_tested": self.edges_tested, "parameters": self.parameters,
                "row_parameters": self.row_parameters,
                "skipped": self.skipped}

    def format(self) -> str:
        """The human-readable report."""
        lines = [f"sampler audit: {self.contract}" + (f"; claimed rule {self.rule}" if self.rule else ""),
                 f"{self.samples} samples per context, seed {self.seed}; {len(self.tests)} tests, each at "
                 f"{self.level_alpha:.2g} (Bonferroni: {self.family_alpha:g} over the family)", ""]
        width = max((len(f"{t.name}, {t.context}") for t in self.tests), default=10)
        lines.append(f"{'test':<{width}}  {'n':>6}  {'df':>4}  {'p-value':>8}  {'TV':>6}  {'TV <=':>6}  "
                     f"{'detects':>7}  verdict")
        for test in self.tests:
            verdict = "REJECT" if test.rejected else "ok" if test.tested else "untested"
            lines.append(f"{test.name + ', ' + test.context:<{width}}  {describe_result(test.result)}  {verdict}")
        lines.append("")
        lines.append("coverage: " + "; ".join(f"{key} {value}" for key, value in self.coverage.items()))
        lines.extend(f"claim {name}: {verdict}" for name, verdict in self.parameters.items())
        lines.extend(f"row {name}: {verdict}" for name, verdict in self.row_parameters.items())
        if self.output.clean:
            lines.append(f"output contract: held on {self.output.rows} rows")
        else:
            for kind, count in self.output.counts.items():
                lines.append(f"output contract: {count} row(s) with {kind}, e.g. {self.output.examples[kind]}")
        for edge in self.edges:
            reached = ", ".join(f"{name} x{count}" for name, count in edge.forced.items()) or "nothing forced"
            unforced = (f"; reached, not forced: {', '.join(edge.unforced)}" if edge.unforced else "")
            found = ("clean" if edge.contract.clean else "; ".join(
                f"{count} row(s) with {kind}, e.g. {edge.contract.examples[kind]}"
                for kind, count in edge.contract.counts.items()))
            found = found if edge.reached or not edge.contract.clean else "not tested"
            lines.append(f"edge u = {edge.edge} ({edge.likelihood}): {reached}{unforced} -> {found}")
        if self.edges_tested is False:
            lines.append(f"edges: {NOT_REACHABLE}")
        if self.skipped:
            lines.append("skipped: " + "; ".join(self.skipped))
        edges = ", edges UNTESTED (not reachable)" if self.edges_tested is False else ""
        lines.append(f"\nverdict: {self.verdict.value}{edges}")
        return "\n".join(lines)
