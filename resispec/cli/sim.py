"""``resispec sim drift|compare|rounds``: the residual-drift explorer and the replay of logged rounds
(logic in the ``sim`` package)."""

from __future__ import annotations

import argparse
import sys

from resispec.cli.arguments import candidate_count, nonneg_seed, output_dir, positive_int
from resispec.cli.output import strict_json
from resispec.cli.table import WIDTH, fixed, format_table, wrap

SOURCE_HELP = (
    "a pair source (repeatable): dirichlet:alpha=1,V=256[,mix=0]; zipf:s=1.1,V=256,head=16,mode=permute|perturb"
    "[,sigma=0.5]; temperature:tau=0.7,V=256[,scale=3]; llm:sigma=1,V=256[,scale=3]; any synthetic family also "
    "takes top_k=K and/or top_p=P; logged:FILE[,draft=NAME] or logged:sample (default: {default})"
)

NOTE = ("\nintervals: 95% over the pairs (pair sampling and Monte Carlo). ratio = mean acceptance / mean optimum of "
        "the verifier's drafting scheme; gap share = (acceptance - baseline) / (optimum - baseline), baseline rrs "
        "(i.i.d.) or rrs_wor (WOR). alpha*-WOR: transport LP where small, else the ratio-prefix bound (an upper "
        "bound); seq WOR opt: the sequential WOR LP (small V) or the k <= 2 closed form, '-' where not computed.")


def register(subparsers: argparse._SubParsersAction) -> None:
    from resispec.sim.explorer import (
        DEFAULT_DRIFT_K,
        DEFAULT_KS,
        DEFAULT_PAIRS,
        DEFAULT_SOURCES,
        DEFAULT_TREE,
        DEFAULT_VERIFIERS,
    )
    from resispec.sim.kernels import SUPPORTED, MonteCarlo

    parser = subparsers.add_parser("sim", help="residual-drift explorer over synthetic and logged (p, q) pairs")
    commands = parser.add_subparsers(dest="sim_command", required=True, metavar="SUBCOMMAND")
    drift = commands.add_parser(
        "drift", help="drift curves: acceptance of candidate i given 1..i-1 rejected, and residual drift",
        description="Per verifier at one k: conditional acceptance and residual TV by candidate index, "
                    "acceptance and optima. Writes drift.csv, drift_summary.csv and PNG plots to --out.")
    compare = commands.add_parser(
        "compare", help="acceptance vs k against the i.i.d., WOR and sequential optima; tokens per forward",
        description="Per verifier and k: mean acceptance, each optimum and the ratios; accepted tokens per "
                    "target forward for a tree shape. Writes compare.csv, tree.csv and PNG plots to --out.")
    drift.add_argument("--k", type=candidate_count, default=DEFAULT_DRIFT_K, metavar="K",
                       help="candidates (default: %(default)s)")
    compare.add_argument("--k", nargs="+", type=candidate_count, default=list(DEFAULT_KS), metavar="K",
                         help="candidate counts (default: %(default)s)")
    compare.add_argument("--tree", default=",".join(map(str, DEFAULT_TREE)), metavar="B1,B2,...",
                         help="tree shape, children per node at each depth (default: %(default)s)")
    for command, handler in ((drift, run_drift), (compare, run_compare)):
        command.add_argument("--source", action="append", metavar="SPEC",
                             help=SOURCE_HELP.format(default=", ".join(DEFAULT_SOURCES)))
        command.add_argument("--verifiers", nargs="+", default=list(DEFAULT_VERIFIERS), choices=SUPPORTED,
                             metavar="NAME", help=f"verifiers among {', '.join(SUPPORTED)} (default: %(default)s)")
        command.add_argument("--pairs", type=positive_int, default=DEFAULT_PAIRS, metavar="N",
                             help="pairs per source (a logged source uses its first N rows; default: %(default)s)")
        command.add_argument("--seed", type=nonneg_seed, default=0,
                             help="seed of every random draw (default: %(default)s)")
        command.add_argument("--samples", type=positive_int, default=MonteCarlo().samples, metavar="M",
                             help="Monte Carlo draws per pair where the candidate tuples are too many to enumerate: "
                                  "rejection paths (rrs_wor, resispec_wor) or tuples (resispec_paper; "
                                  "default: %(default)s)")
        command.add_argument("--enumerate", type=positive_int, default=MonteCarlo().enumeration_limit, metavar="T",
                             help="enumerate a pair's candidate tuples (exact) when there are at most T "
                                  "(default: %(default)s)")
        command.add_argument("--out", type=output_dir, default="out/sim", metavar="DIR",
                             help="output directory (default: %(default)s)")
        command.add_argument("--json", action="store_true", help="print JSON records instead of tables")
        command.set_defaults(handler=handler)
    _register_rounds(commands)


def _register_rounds(commands: argparse._SubParsersAction) -> None:
    from resispec.formats.pairs import TAIL_MODES

    rounds = commands.add_parser(
        "rounds", help="replay logged rounds: every round verifier's exact E[accepted | tree], paired",
        description="For every round of a round log (resispec replay --log), each verifier's exact expected "
                    "accepted draft tokens given the tree, and the paired differences to the baseline with standard "
                    "errors. Writes rounds.csv (per round) and rounds.png to --out.")
    rounds.add_argument("log", metavar="FILE", help="a round log (.npz, resispec-pairs/1 with round fields)")
    rounds.add_argument("--verifiers", nargs="+", default=None, metavar="NAME",
                        help="round verifiers (sequence-level or zoo names, node by node); the first is the baseline "
                             "(default: by the log's kind, resispec.sim.rounds.DEFAULT_VERIFIERS)")
    rounds.add_argument("--tail", choices=TAIL_MODES, default="merge",
                        help="a sparse row's tails: one bucket (merge) or one each (split) (default: %(default)s)")
    rounds.add_argument("--out", type=output_dir, default="out/sim", metavar="DIR",
                        help="output directory (default: %(default)s)")
    rounds.add_argument("--json", action="store_true", help="print JSON records instead of a table")
    rounds.set_defaults(handler=run_rounds)


def _settings(args: argparse.Namespace):
    from resispec.sim.explorer import Settings
    from resispec.sim.kernels import MonteCarlo

    return Settings(pairs=args.pairs, seed=args.seed,
                    monte_carlo=MonteCarlo(samples=args.samples, enumeration_limit=args.enumerate))


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _interval(record: dict, key: str) -> str:
    low, high = record[f"{key}_ci"]
    if record[key] != record[key]:
        return "-"
    return f"{fixed(record[key])} [{fixed(low)}, {fixed(high)}]"


def _verifier(record: dict) -> str:
    return record["verifier"] + (" (biased)" if record["biased"] else "")


def _summary_table(records: list[dict]) -> str:

    rows = [[r["source"], _verifier(r), r["k"], _interval(r, "acceptance"),
             f"{fixed(r['optimum'])} ({r['optimum_kind']})", fixed(r["ratio_to_optimum"]), _interval(r, "share_of_gap"),
             fixed(r["iid_optimum"]), fixed(r["sequential_optimum"]), fixed(r["wor_optimum"]),
             fixed(r["sequential_wor_optimum"]), r["method"]] for r in records]
    return format_table(["source", "verifier", "k", "acceptance [95% CI]", "optimum (drafting)", "ratio",
                         "gap share [95% CI]", "iid opt", "seq opt", "alpha*-WOR", "seq WOR opt", "method"], rows,
                        WIDTH, keys=3)


def _gain_table(records: list[dict]) -> str:
    """Per-pair gain over resispec: the mean, and the largest with its row."""

    rows = [[r["source"], _verifier(r), r["k"], fixed(r["gain_over_resispec"], sign=True),
             fixed(r["max_gain_over_resispec"], sign=True), r["max_gain_row"]]
            for r in records if r["verifier"] != "resispec"]
    return format_table(["source", "verifier", "k", "mean gain over resispec", "largest per-pair gain", "row"], rows,
                        WIDTH, keys=3)


def _files(files: dict) -> dict[str, str]:
    return {name: str(path) for name, path in files.items()}


def _explore(explore, write, out: str):
    """``(result, files)`` from running ``explore()`` and writing its files to ``out`` (bad arguments:
    ValueError; an unwritable ``--out``: a ValueError naming it)."""
    from pathlib import Path

    result = explore()
    try:
        return result, _files(write(result, Path(out)))
    except OSError as error:
        raise ValueError(f"cannot write to --out {out}: {error}") from None


def run_drift(args: argparse.Namespace) -> int:
    from resispec.sim.explorer import DEFAULT_SOURCES, run_drift
    from resispec.sim.report import write_drift

    result, files = _explore(lambda: run_drift(args.source or list(DEFAULT_SOURCES), args.verifiers, args.k,
                                               _settings(args), _progress), write_drift, args.out)
    records = result.records()
    if args.json:
        print(strict_json({"command": "drift", "records": records, "files": files}))
        return 0
    print(_summary_table(records))
    steps = [f"i={i}" for i in range(1, result.k + 1)]
    for key, what in (("conditional_acceptance", "P(accept candidate i | 1..i-1 rejected)"),
                      ("residual_tv", "TV(residual after i-1 rejections, proposal of candidate i)")):
        rows = [[r["source"], _verifier(r) + ("" if r["sequential"] else " (one selection step)"),
                 *(fixed(step[key], 3) for step in r["curve"]), *["-"] * (result.k - len(r["curve"]))]
                for r in records]
        print(f"\n{what}:")
        print(format_table(["source", "verifier", *steps], rows, WIDTH, keys=2))
    print("\n" + wrap(NOTE.strip()))
    print("wrote: " + ", ".join(files.values()))
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from resispec.sim.explorer import DEFAULT_SOURCES, run_compare
    from resispec.sim.report import write_compare
    from resispec.sim.tree import parse_shape

    result, files = _explore(lambda: run_compare(args.source or list(DEFAULT_SOURCES), args.verifiers, args.k,
                                                   parse_shape(args.tree), _settings(args), _progress),
                    write_compare, args.out)
    records, tree = result.records(), result.tree_records()
    if args.json:
        print(strict_json({"command": "compare", "records": records, "tree": tree, "files": files}))
        return 0
    print(_summary_table(records))
    print("\nper-pair gain over resispec (acceptance - resispec's on the same pair):")
    print(_gain_table(records))
    rows = [[t["source"], _verifier(t), f"{t['accepted_analytic']:.3f}",
             _interval(t, "accepted_replay"), t["replay_starts"]] for t in tree]
    print(f"\naccepted tokens per target forward, tree {args.tree} ({tree[0]['nodes']} drafted nodes; "
          "tokens per forward = accepted + 1):")
    print(format_table(["source", "verifier", "analytic (stationary)", "replay over chains [95% CI]", "starts"], rows,
                       WIDTH, keys=2))
    print("\n" + wrap(NOTE.strip()))
    print("wrote: " + ", ".join(files.values()))
    return 0


def run_rounds(args: argparse.Namespace) -> int:
    from dataclasses import asdict
    from pathlib import Path

    from resispec.formats.pairs import read_logged
    from resispec.sim.rounds import score_log, summarise, table
    from resispec.sim.rounds_report import plot_differences, write_rounds_csv

    kind, accepted = score_log(read_logged(args.log), args.verifiers, args.tail)
    summaries = summarise(accepted, next(iter(accepted)))
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        files = {"csv": str(write_rounds_csv(out / "rounds.csv", accepted)),
                 "plot": str(plot_differences(out / "rounds.png", kind, summaries))}
    except OSError as error:
        raise ValueError(f"cannot write to --out {out}: {error}") from None
    if args.json:
        records = [{**asdict(s), "resolved_at_2se": s.resolved} for s in summaries]
        print(strict_json({"command": "rounds", "kind": kind, "tail": args.tail, "records": records, "files": files}))
        return 0
    print(table(kind, summaries))
    print("wrote: " + ", ".join(files.values()))
    return 0
