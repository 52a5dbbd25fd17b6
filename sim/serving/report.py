"""The audit report of a logged set, computed from its merged statistics (``resispec.sim.serving.stats``).

Per verifier (all its k together):

- **PIT**: the core's ``pit_audit`` (KS + 20-bin chi-square) on the PIT stream rebuilt from the fine
  histogram (bin centres), for each of the two category orders.

Per (verifier, k):

- **bound**: the observed acceptance ``A`` (nodes whose accepted index is not -1) against the sum of
  the optima ``S = sum_n opt_n``. Any exact verifier has ``E[A] <= S``; by Hoeffding's inequality
  ``P(A - E[A] >= t) <= exp(-2 t^2 / N)``, so the p-value of ``A`` exceeding ``S`` by ``t > 0`` is at
  most ``exp(-2 t^2 / N)`` (1 when ``A <= S``).
- **acceptance vs the verifier's exact acceptance** (reported, not part of the verdict): ``z = (A -
  sum alpha_n) / sqrt(sum alpha_n (1 - alpha_n))``, two-sided normal p-value; and the chi-square
  (core ``merged_chi_square``) of the accepted indices against the pooled step law
  ``e_i = sum_n a_i(n) / N`` (one accept category for a verifier that is not sequential). On a log
  with large tails these differ from the truth by up to the tail overlap (``docs/sim.md``).
- **drift table**: per step i the verifier's conditional acceptance ``sum a_i / sum r_i`` and residual
  TV ``sum d_i / sum r_i`` (delta-method 95 % intervals from the moment sums, as ``resispec.formats.stats``), and the
  observed conditional acceptance ``#{index = i} / #{index >= i or residual}``.

Verdict: a verifier's nodes are rejected outright if any emitted a token of p = 0 (``impossible``); else
they pass iff both PIT audits (KS and chi-square each) and every bound test
pass at the Bonferroni level ``alpha / (number of tests)``; they are rejected if any of them rejects,
and ``UNTESTED`` (never a pass) if none rejects but a PIT audit had too few nodes to have any power
(``resispec.audit.Verdict``). The set is rejected if any verifier is, passes iff every verifier does,
and is untested otherwise.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy import stats

from resispec.audit import DEFAULT_ALPHA, Verdict, pit_audit
from resispec.audit.goodness_of_fit import merged_chi_square
from resispec.formats.stats import Z95
from resispec.sim.serving.exact import as_float, as_fraction
from resispec.sim.serving.stats import PIT_BINS, GroupTally, ShardStats, single_step
from resispec.verifiers import VERIFIERS

CENTRES = (np.arange(PIT_BINS) + 0.5) / PIT_BINS


def pit_stream(histogram: np.ndarray) -> np.ndarray:
    """The PIT values a fine histogram stands for (bin centres, in bin order)."""
    return np.repeat(CENTRES, histogram)


def _ratio(numerator: int, denominator: int, square: int, cross: int, denominator_sq: int,
           nodes: int) -> list[float]:
    """``[value, low, high]`` of ``sum a / sum b`` with the delta-method interval of ``resispec.formats.stats``:
    ``se^2 = (sum a^2 - 2 R sum ab + R^2 sum b^2) N / (N - 1) / (sum b)^2``, in exact fractions."""
    if denominator <= 0:
        return [float("nan")] * 3
    ratio = Fraction(numerator, denominator)
    residual = as_fraction(square) - 2 * ratio * as_fraction(cross) + ratio**2 * as_fraction(denominator_sq)
    se = math.sqrt(max(float(residual), 0.0) * nodes / (nodes - 1)) / as_float(denominator) if nodes > 1 else 0.0
    value = float(ratio)
    return [value, value - Z95 * se, value + Z95 * se]


def _drift_table(tally: GroupTally) -> list[dict]:
    steps = 1 if single_step(tally.verifier) else tally.k
    observed = tally.observed if steps == tally.k else np.array([tally.observed[:-1].sum(), tally.observed[-1]])
    reached_observed = np.cumsum(observed[::-1])[::-1]
    s = tally.steps
    rows = []
    for i in range(steps):
        row = {"step": i + 1, "observed_conditional_acceptance":
               float(observed[i] / reached_observed[i]) if reached_observed[i] else float("nan"),
               "observed_reached": int(reached_observed[i])}
        if tally.step_law:
            accept = _ratio(s["accepted"][i], s["reached"][i], s["accepted_sq"][i], s["accepted_reached"][i],
                            s["reached_sq"][i], tally.nodes)
            drift = _ratio(s["drift"][i], s["reached"][i], s["drift_sq"][i], s["drift_reached"][i],
                           s["reached_sq"][i], tally.nodes)
            row.update(conditional_acceptance=accept[0], conditional_acceptance_ci=accept[1:],
                       reach=as_float(s["reached"][i]) / tally.nodes, residual_tv=drift[0], residual_tv_ci=drift[1:])
        rows.append(row)
    return rows


def _step_law_pvalue(tally: GroupTally) -> float:
    """Chi-square p-value of the accepted indices against the pooled step law (NaN without one)."""
    if not tally.step_law:
        return float("nan")
    expected = np.array([as_float(total) for total in tally.steps["accepted"]]) / tally.nodes
    observed = tally.observed
    if single_step(tally.verifier):
        expected, observed = expected[:1], np.array([observed[:-1].sum(), observed[-1]])
    expected = np.append(expected, max(1.0 - expected.sum(), 0.0))
    return merged_chi_square(observed, expected).pvalue


def group_record(tally: GroupTally, level: float) -> dict:
    """Acceptance, its tests and the drift table of one (verifier, k)."""
    nodes = tally.nodes
    accepted = int(nodes - tally.observed[-1])
    record = {"verifier": tally.verifier, "k": tally.k, "nodes": nodes,
              "drafting": VERIFIERS[tally.verifier].drafting, "claims_exact": VERIFIERS[tally.verifier].claims_exact,
              "observed_acceptance": accepted / nodes}
    if tally.law_nodes == nodes:
        expected = as_float(tally.acceptance)
        variance = max(expected - as_float(tally.acceptance_sq), 0.0)
        z = (accepted - expected) / math.sqrt(variance) if variance > 0 else float("nan")
        record.update(expected_acceptance=expected / nodes, acceptance_z=z,
                      acceptance_pvalue=float(2 * stats.norm.sf(abs(z))) if z == z else float("nan"),
                      step_law_pvalue=_step_law_pvalue(tally),
                      law_method=("monte carlo" if tally.monte_carlo else "exact")
                      + ("" if tally.step_law else " (acceptance only)"))
    else:
        record.update(expected_acceptance=float("nan"), acceptance_z=float("nan"), acceptance_pvalue=float("nan"),
                      step_law_pvalue=float("nan"),
                      law_method=f"not computed on {nodes - tally.law_nodes} of {nodes} nodes (too many tuples)")
    if tally.optimum_nodes == nodes:
        optimum = as_float(tally.optimum)
        excess = accepted - optimum
        pvalue = math.exp(-2.0 * excess**2 / nodes) if excess > 0 else 1.0
        record.update(optimum=optimum / nodes, bound_pvalue=pvalue, bound_passed=pvalue >= level)
    else:
        record.update(optimum=float("nan"), bound_pvalue=float("nan"), bound_passed=True)
    record["drift"] = _drift_table(tally)
    return record


def audit_report(merged: ShardStats, alpha: float = DEFAULT_ALPHA) -> dict:
    """The report (a JSON-ready dict) of merged statistics; ``passed`` is the set's verdict."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha: expected a significance level in (0, 1), got {alpha}")
    verifiers = sorted({name for name, _ in merged.groups}, key=list(VERIFIERS).index)
    tests = 4 * len(verifiers) + len(merged.groups)  # two PIT audits of two tests each, a bound per group
    level = alpha / max(tests, 1)
    records = []
    for name in verifiers:
        tallies = [merged.groups[key] for key in sorted(merged.groups) if key[0] == name]
        groups = [group_record(tally, level) for tally in tallies]
        pit = {key: _pit_record(sum(getattr(tally, key) for tally in tallies), level) for key in ("pit", "pit_ratio")}
        impossible = sum(tally.impossible for tally in tallies)
        rejected = impossible > 0 or not all(item["passed"] or not item["tested"] for item in pit.values()) \
            or not all(group["bound_passed"] for group in groups)
        tested = all(item["tested"] for item in pit.values())
        verdict = Verdict.FAIL if rejected else Verdict.of(True, tested)
        records.append({"verifier": name, "claims_exact": VERIFIERS[name].claims_exact,
                        "nodes": sum(tally.nodes for tally in tallies), "impossible": impossible,
                        "passed": verdict is Verdict.PASS,
                        "verdict": verdict.value, **pit, "groups": groups})
    verdicts = {record["verdict"] for record in records}
    verdict = Verdict.FAIL if Verdict.FAIL in verdicts else Verdict.of(True, bool(records) and verdicts == {"PASS"})
    return {"rows": merged.rows, "alpha": alpha, "level_per_test": level, "tests": tests,
            "passed": verdict is Verdict.PASS, "verdict": verdict.value, "verifiers": records,
            "skipped": [{"where": where, "problem": problem} for where, problem in merged.skipped]}


def _pit_record(histogram: np.ndarray, level: float) -> dict:
    """The core's ``pit_audit`` of a fine histogram at the level of its two tests (KS and chi-square);
    ``tested`` False (and ``passed`` False) where the values are too few to have any power."""
    if histogram.sum() < 2:
        return {"passed": False, "tested": False, "pvalue": float("nan"), "ks_pvalue": float("nan"),
                "chi2_pvalue": float("nan"), "tv": float("nan"), "min_detectable_tv": float("nan")}
    result = pit_audit(pit_stream(histogram), alpha=2 * level)
    return {"passed": result.passed, "tested": result.tested, "pvalue": result.pvalue, "ks_pvalue": result.ks_pvalue,
            "chi2_pvalue": result.chi2_pvalue, "tv": result.tv, "min_detectable_tv": result.min_detectable_tv}
