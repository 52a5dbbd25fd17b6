"""The sampling audits: exact verifiers pass, every control is rejected where its bias is largest."""

from __future__ import annotations

import numpy as np
import pytest

from resispec import VERIFIERS, get_verifier
from resispec.audit import DEFAULT_ALPHA, DEFAULT_SAMPLES, Verdict, exact_law, pit_audit, sample_audit
from resispec.audit.goodness_of_fit import merged_chi_square, min_detectable_tv
from resispec.audit.runner import PROMISED_TV, _audit_seed, run_audit
from resispec.cli.audit import audit_table
from resispec.suite import get_suite
from resispec.verifiers import Verifier
from tests.readme import ROOT, doc_section

CONTROLS = [name for name, cls in VERIFIERS.items() if not cls.claims_exact]


def _worst_pair_and_k(name: str):
    verifier = get_verifier(name)
    options = []
    for pair in get_suite():
        for k in (2, 4):
            limit = verifier.scheme.max_candidates(pair.q)
            if limit is None or k <= limit:
                options.append((exact_law(verifier, pair.p, pair.q, k).tv, pair, k))
    return max(options, key=lambda option: option[0])


@pytest.mark.parametrize("name", CONTROLS)
def test_sample_audit_rejects_each_control_where_its_bias_is_largest(name):
    bias, pair, k = _worst_pair_and_k(name)
    result = sample_audit(name, pair.p, pair.q, k, seed=11)
    assert result.n == DEFAULT_SAMPLES
    assert not result.passed, (name, pair.name, k, bias, result)
    assert result.tv_upper >= bias - 1e-9


ONE_WORKER = pytest.mark.xdist_group("default-audit")
"""On one xdist worker: the tests sharing the module fixture ``default_report`` (computed once, not once per worker)."""


@pytest.fixture(scope="module")
def default_report():
    return run_audit()


@ONE_WORKER
def test_default_audit_job_passes(default_report):
    assert default_report.passed
    exact_rows = [row for row in default_report.rows if row.claims_exact]
    assert {row.verifier for row in exact_rows} == {"sps", "rrs", "rrs_wor", "spectr", "topk", "resispec", "pooled",
                                                     "resispec_wor", "pooled_wor", "partial_resolution"}
    assert all(row.verdict == "PASS" for row in exact_rows)
    for name in CONTROLS:
        assert any(row.caught for row in default_report.rows if row.verifier == name), name


@ONE_WORKER
def test_default_audit_covers_the_suite_with_a_bonferroni_level(default_report):
    audits = sum(len(row.outcomes) for row in default_report.rows if row.claims_exact)
    assert default_report.alpha == pytest.approx(0.01 / audits)
    names = {pair.name for pair in get_suite()}
    assert {o.pair for row in default_report.rows for o in row.outcomes} == names


@ONE_WORKER
def test_the_docs_show_the_default_audit(default_report):
    """docs/audits.md's sample table is what ``resispec audit`` prints (``audit_table`` of the default report), and
    the sample size and per-audit level quoted under it are the report's. An exact verifier's exact-law
    error is float rounding (~1e-16, it moves with summation order), so there both need only be < 1e-12."""
    section = doc_section(ROOT / "docs" / "audits.md", "### The default run")
    printed = [line.rstrip() for line in audit_table(default_report).splitlines()]
    shown = section.split("```\n")[1].splitlines()
    column = printed[0].index("max exact-law err")

    def comparable(line: str) -> str:
        error = line[column:].split()[0]
        rounding = line.split()[1] == "yes" and float(error) < 1e-12
        return line[:column] + ("< 1e-12" if rounding else error) + line[column + len(error):]

    assert [comparable(line) for line in shown] == [comparable(line) for line in printed], (
        "docs/audits.md: paste the table `resispec audit` prints now:\n" + "\n".join(printed))
    assert f"Each sampling audit draws {default_report.samples} samples" in section
    assert f"(Bonferroni, {default_report.alpha:.2g} per audit here)" in section


def test_audit_report_fails_when_a_control_claims_exactness(monkeypatch):
    """The job's verdict must turn red if a biased rule is marked exact."""
    monkeypatch.setattr(VERIFIERS["ears"], "claims_exact", True)
    report = run_audit(["ears", "rrs"], ks=(2,), suite="quick", samples=3000)
    assert not report.passed
    assert [row.verdict for row in report.rows if row.verifier == "ears"] == ["FAIL"]


def test_the_runner_binds_each_verifier_k_and_pair_once(monkeypatch):
    """The exact-law and the sampling audit of a (verifier, k, pair) share one BoundVerifier (one plan), and the
    shared binding gives the figures the two separate audits give."""
    binds = []
    bind = Verifier.bind
    monkeypatch.setattr(Verifier, "bind", lambda self, p, q, k: binds.append((self.name, k)) or bind(self, p, q, k))
    report = run_audit(["pooled_wor"], ks=(2,), suite="quick", samples=500, seed=3)
    (row,) = report.rows
    assert len(binds) == len(row.outcomes) > 0
    pair = next(pair for pair in get_suite("quick") if pair.name == row.outcomes[0].pair)
    alone = sample_audit("pooled_wor", pair.p, pair.q, 2, n=500, seed=_audit_seed(3, "pooled_wor", 2, pair.name),
                         alpha=report.alpha)
    assert row.outcomes[0].sampled_tv == alone.tv
    assert row.outcomes[0].exact_error == exact_law("pooled_wor", pair.p, pair.q, 2).max_error


def test_sample_audit_passes_an_exact_verifier_and_reports_power():
    pair = get_suite()[1]
    result = sample_audit("resispec", pair.p, pair.q, 3, n=4000, seed=5)
    assert result.passed and result.alpha == DEFAULT_ALPHA
    assert 0 < result.tv <= result.tv_upper
    assert result.min_detectable_tv == pytest.approx(min_detectable_tv(4000, result.chi2_df, DEFAULT_ALPHA))
    assert result.acceptance_rate == pytest.approx(get_verifier("resispec").acceptance(pair.p, pair.q, 3), abs=0.03)


def test_power_grows_with_samples():
    assert min_detectable_tv(40000, 5, 1e-3) < min_detectable_tv(4000, 5, 1e-3) / 3


def test_chi_square_flags_impossible_tokens_and_merges_sparse_bins():
    expected = np.array([0.5, 0.5 - 1e-9, 1e-9, 0.0])
    assert merged_chi_square(np.array([50, 49, 0, 1]), expected).pvalue == 0.0
    clean = merged_chi_square(np.array([50, 50, 0, 0]), expected)
    assert clean.df == 1 and clean.pvalue > 0.5


def test_pit_audit_accepts_uniform_and_rejects_skew():
    rng = np.random.default_rng(0)
    assert pit_audit(rng.random(3000)).passed
    skewed = pit_audit(rng.random(3000) ** 1.3)
    assert not skewed.passed and skewed.ks_pvalue < 1e-4


def test_a_sample_too_small_to_see_the_promised_bias_is_untested_never_a_pass():
    """``resispec audit --samples 10`` (issue 46): no exact row passes, a control's bias that no sample of that
    size can see is "too small to see" (not "not caught"), and the job's verdict is UNTESTED."""
    report = run_audit(["rrs", "rrs_skip_dup"], ks=(2,), suite="quick", samples=10)
    rrs, control = report.rows
    assert rrs.verdict == Verdict.UNTESTED.value and not rrs.detectable_tv <= PROMISED_TV
    assert control.verdict == "too small to see" and not control.caught
    assert report.verdict is Verdict.UNTESTED and not report.passed
    assert report.untested and report.to_dict()["verdict"] == "UNTESTED"


def test_a_sample_that_sees_the_promised_bias_passes_and_says_what_it_sees():
    report = run_audit(["rrs"], ks=(2,), suite="quick", samples=3000)
    (row,) = report.rows
    assert row.verdict == "PASS" and 0 < row.detectable_tv <= PROMISED_TV
    assert all(o.detectable_tv == o.detectable_tv or o.pair == "one-hot-p" for o in row.outcomes)
    assert report.verdict is Verdict.PASS and report.to_dict()["rows"][0]["detectable_tv"] == row.detectable_tv
