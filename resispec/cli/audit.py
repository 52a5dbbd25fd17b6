"""``resispec audit``: exactness audits of the verifier zoo on a built-in suite of pairs."""

from __future__ import annotations

import argparse
import sys

from resispec.cli.arguments import audit_samples, candidate_count, nonneg_seed, verifier_name
from resispec.cli.output import strict_json


def register(subparsers: argparse._SubParsersAction) -> None:
    from resispec.audit.runner import DEFAULT_KS
    from resispec.audit.sampling import DEFAULT_SAMPLES
    from resispec.suite import SUITE_NAMES
    from resispec.verifiers import VERIFIERS

    parser = subparsers.add_parser(
        "audit", help="exact-law and sampling audits of every verifier on a suite of pairs",
        description="Exit status 0 iff every exact verifier passes and every biased control is caught.",
    )
    parser.add_argument("--verifier", nargs="+", type=verifier_name, metavar="NAME",
                        help=f"verifiers to audit (default: all of {', '.join(VERIFIERS)})")
    parser.add_argument("--k", nargs="+", type=candidate_count, default=list(DEFAULT_KS), metavar="K",
                        help="candidate counts (default: %(default)s; sps always uses k = 1)")
    parser.add_argument("--suite", choices=SUITE_NAMES, default="standard", help="pair suite (default: %(default)s)")
    parser.add_argument("--samples", type=audit_samples, default=DEFAULT_SAMPLES, metavar="N",
                        help="samples per sampling audit (default: %(default)s)")
    parser.add_argument("--seed", type=nonneg_seed, default=0, metavar="S", help="base seed (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from resispec.audit.runner import FAMILY_ALPHA, PROMISED_TV, run_audit
    from resispec.cli.table import wrap

    report = run_audit(args.verifier, args.k, args.suite, args.samples, args.seed,
                       progress=lambda line: print(line, file=sys.stderr, flush=True))
    if args.json:
        print(strict_json(report.to_dict()))
        return _status(report)
    print(audit_table(report))
    print("\n" + wrap(
        f"suite {report.suite}: {report.samples} samples per sampling audit, seed {report.seed}; chi-square level "
        f"{report.alpha:.2g} per audit (Bonferroni: {FAMILY_ALPHA} over every sampling audit of an exact verifier); "
        f"exact-law tolerance 1e-12. Detectable TV: the largest TV from p a row's sampling audits detect with power "
        f"0.9; the audit promises {PROMISED_TV}, UNTESTED beyond. Acceptance and its ratio to the i.i.d. optimum "
        f"are means over the suite pairs."))
    skipped = sorted({(row.verifier, row.k, name) for row in report.rows for name in row.skipped})
    if skipped:
        print(wrap("skipped (k exceeds the draft's support for WOR/top-k drafting, or the exact enumeration's tuple "
                   "limit): " + ", ".join(f"{v} k={k} on {name}" for v, k, name in skipped)))
    print(f"\nverdict: {report.verdict.value}")
    return _status(report)


def audit_table(report) -> str:
    """The table ``resispec audit`` prints: one line per (verifier, k) of an ``AuditReport`` (the README shows it)."""
    from resispec.cli.table import format_table

    headers = ["verifier", "exact?", "drafting", "k", "max exact-law err", "sampled TV", "detectable TV",
               "chi2 p (min)", "acceptance", "acc / iid opt", "worst pair", "verdict"]
    rows = [[row.verifier, "yes" if row.claims_exact else "no (control)", row.drafting, row.k,
             f"{row.max_exact_error:.1e}", f"{row.max_sampled_tv:.3f}", f"{row.detectable_tv:.3f}",
             f"{row.min_chi2_pvalue:.2g}",
             f"{row.mean_acceptance:.4f}", f"{row.mean_ratio_to_optimum:.4f}", row.worst_pair, row.verdict]
            for row in report.rows]
    return format_table(headers, rows)


def _status(report) -> int:
    """0 if the audit passed, 1 if it failed, 2 (with one line on stderr) if it could not test what it promises."""
    from resispec.audit import Verdict

    if report.verdict is Verdict.UNTESTED:
        print(f"resispec audit: error: untested: {'; '.join(report.untested)}; raise --samples, or audit a control "
              "at a k or suite where it is biased", file=sys.stderr)
        return 2
    return 0 if report.passed else 1
