"""``resispec audit-log PATH``: exactness audits over logged nodes at serving scale (``resispec.sim.serving``), or
over an engine's token log (``resispec-pit/1``, written by the vLLM plugin: ``resispec.sim.serving.pit_log``)."""

from __future__ import annotations

import argparse
import sys
import time

from resispec.cli.arguments import nonneg_seed, positive_int, significance


def register(subparsers: argparse._SubParsersAction) -> None:
    from resispec.audit import DEFAULT_ALPHA

    parser = subparsers.add_parser(
        "audit-log", help="audit logged verified nodes (Parquet shards): PIT, acceptance vs the optima, drift",
        description="Streams every row group of PATH (a resispec-nodes/1 Parquet file or a directory of them) "
                    "through mergeable statistics: randomized PIT of the emitted token against p, acceptance "
                    "against the verifier's exact acceptance and the optimum of its drafting scheme, drift "
                    "tables. Exit status 0 iff every verifier's nodes pass, 1 if any are rejected, 2 on bad input.")
    parser.add_argument("path", metavar="PATH",
                        help="resispec-nodes/1 Parquet file(s), or resispec-pit/1 shards (the vLLM plugin's log)")
    parser.add_argument("--engine", choices=("local", "ray"), default="local",
                        help="local: this machine's processes; ray: Ray tasks (pip install 'resispec[scale]')")
    parser.add_argument("--address", metavar="ADDR", help="Ray cluster address (default: start a local instance)")
    parser.add_argument("--workers", type=positive_int, metavar="W",
                        help="local processes, or CPUs of a local Ray instance (default: all CPUs)")
    parser.add_argument("--seed", type=nonneg_seed, default=0, help="seed of the PIT uniforms (default: %(default)s)")
    parser.add_argument("--alpha", type=significance, default=DEFAULT_ALPHA,
                        help="family-wise significance level (default: %(default)s)")
    parser.add_argument("--skip-bad", action="store_true",
                        help="skip files and row groups that do not match the layout (listed in the report)")
    parser.add_argument("--no-optimum", action="store_true",
                        help="skip the optima (alpha*-WOR costs milliseconds per node)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=run_audit_log)


def _number(value: float, digits: int = 4) -> str:
    return "-" if value != value else f"{value:.{digits}f}"


def _pvalue(value: float) -> str:
    return "-" if value != value else f"{value:.2g}"


def print_report(report: dict) -> None:
    from resispec.cli.table import format_table

    rows = [[r["verifier"] + ("" if r["claims_exact"] else " (control)"), r["nodes"], r["impossible"],
             _pvalue(r["pit"]["pvalue"]), _pvalue(r["pit_ratio"]["pvalue"]),
             _number(r["pit"]["min_detectable_tv"], 3) if r["pit"]["tested"] else "none (untested)",
             r["verdict"]] for r in report["verifiers"]]
    print(format_table(["verifier", "nodes", "impossible", "PIT p", "PIT p (ratio order)", "min detectable TV",
                        "verdict"], rows))
    groups = [g for r in report["verifiers"] for g in r["groups"]]
    rows = [[g["verifier"], g["k"], g["nodes"], _number(g["observed_acceptance"]), _number(g["expected_acceptance"]),
             _number(g["acceptance_z"], 2), _pvalue(g["step_law_pvalue"]), _number(g["optimum"]),
             _pvalue(g["bound_pvalue"]), g["law_method"]] for g in groups]
    print("\nacceptance: observed, the verifier's exact value on the logged pairs (z), the optimum of its drafting:")
    print(format_table(["verifier", "k", "nodes", "observed", "expected", "z", "step law p", "optimum", "bound p",
                        "law"], rows))
    for g in groups:
        rows = [[d["step"], _number(d["observed_conditional_acceptance"]), d["observed_reached"],
                 _number(d.get("conditional_acceptance", float("nan"))), _number(d.get("residual_tv", float("nan")))]
                for d in g["drift"]]
        print(f"\ndrift, {g['verifier']} at k = {g['k']} (P(accept candidate i | 1..i-1 rejected)):")
        print(format_table(["step", "observed", "reached", "expected", "residual TV"], rows))
    for skipped in report["skipped"]:
        print(f"skipped: {skipped['problem']}")
    if report["skipped"]:
        print(f"skipped {len(report['skipped'])} bad file(s) or row group(s) (--skip-bad)")
    print(f"\n{report['rows']} rows; {report['tests']} tests at level {report['level_per_test']:.2g} each "
          f"(family-wise {report['alpha']:g}): {report['verdict']}")


def print_pit_report(report: dict) -> None:
    from resispec.cli.table import format_table

    rows = [[t["group"], t["tokens"], _pvalue(t["pvalue"]), _number(t["tv_upper"], 3),
             _number(t["min_detectable_tv"], 3) if t["verdict"] != "UNTESTED" else "none (untested)",
             t["verdict"]] for t in report["tests"]]
    print(format_table(["group", "tokens", "PIT p", "TV upper", "min detectable TV", "verdict"], rows))
    kinds = report["kinds"]
    print(f"\nkinds: {kinds['plain']} plain, {kinds['accepted']} accepted, {kinds['recovered']} recovered, "
          f"{kinds['bonus']} bonus (accepted and recovered are told apart by the token itself, so they are tested "
          "together, as verified)")
    print(f"{report['tokens']} tokens in {report['shards']} shard(s); {report['zero_p']} with p = 0 under their "
          f"processed row (any one rejects); {len(report['tests'])} tests at level {report['level']:.2g} each "
          f"(family-wise {report['alpha']:g}): {report['verdict']}")


def run_pit_log(args: argparse.Namespace) -> int:
    """The audit of a resispec-pit/1 log (local only: the log is one column of floats per token)."""
    from resispec.audit import NothingTested, Verdict
    from resispec.audit.pit import MIN_TESTED_VALUES
    from resispec.cli.output import strict_json
    from resispec.sim.serving.pit_log import audit_pit_log

    if args.engine != "local":
        raise ValueError("--engine ray: resispec-pit/1 logs are audited locally (one column of floats per token)")
    report = audit_pit_log(args.path, args.alpha)
    if args.json:
        print(strict_json(report))
    else:
        print_pit_report(report)
    if report["verdict"] == Verdict.UNTESTED:
        raise NothingTested(f"{args.path}: {report['tokens']} tokens, too few in every group to detect any bias "
                            f"(at least {MIN_TESTED_VALUES} per group); no verdict")
    return 0 if report["passed"] else 1


def run_audit_log(args: argparse.Namespace) -> int:
    import os

    from resispec.formats.pit_log import is_pit_log

    if is_pit_log(args.path):
        return run_pit_log(args)

    from resispec.audit import NothingTested, Verdict
    from resispec.audit.pit import MIN_TESTED_VALUES
    from resispec.cli.output import strict_json
    from resispec.progress import Progress
    from resispec.sim.serving.report import audit_report
    from resispec.sim.serving.runner_local import run_local
    from resispec.sim.serving.runner_ray import run_ray
    from resispec.sim.serving.stats import AuditSettings

    if args.address and args.engine != "ray":
        raise ValueError("--address: only with --engine ray")
    settings = AuditSettings(seed=args.seed, optimum=not args.no_optimum)
    cores = args.workers or os.cpu_count() or 1
    start = time.perf_counter()
    with Progress(desc="audit-log", unit="rows", unit_scale=True) as bar:
        if args.engine == "local":
            merged = run_local(args.path, settings, args.workers, args.skip_bad, bar.update)
        else:
            merged = run_ray(args.path, settings, args.address, args.skip_bad, bar.update, args.workers)
    seconds = time.perf_counter() - start
    if merged.rows == 0:
        raise NothingTested(f"{args.path}: no rows to audit" + (f" ({len(merged.skipped)} skipped as bad)"
                                                               if merged.skipped else "") + "; nothing was tested")
    report = audit_report(merged, args.alpha)
    rate = merged.rows / seconds if seconds > 0 else float("nan")
    where = f"{cores} local core(s)" if args.address is None else f"the cluster at {args.address}"
    print(f"audit-log: {merged.rows} rows in {seconds:.1f} s, {rate:,.0f} rows/s on {where}"
          + ("" if args.address else f", {rate / cores:,.0f} rows/s per core"), file=sys.stderr)
    if args.json:
        print(strict_json(report))
    else:
        print_report(report)
    if report["verdict"] == Verdict.UNTESTED:
        untested = [r["verifier"] for r in report["verifiers"] if r["verdict"] == Verdict.UNTESTED]
        raise NothingTested(f"untested: the PIT of {', '.join(untested)} has too few nodes to detect any bias "
                            f"(at least {MIN_TESTED_VALUES} per verifier); no verdict")
    return 0 if report["passed"] else 1
