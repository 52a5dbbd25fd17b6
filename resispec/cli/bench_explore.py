"""``resispec bench explore``: the explorer's redraw time per (V, k), medians in milliseconds."""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    from resispec.explore.redraw_timing import DEFAULT_KS, DEFAULT_VOCABS

    parser = subparsers.add_parser(
        "explore", help="resispec explore: median server-side redraw time of an edit per (V, k)",
        description="Dirichlet(1) pairs, every registered verifier selected; the browser's rendering is not included.")
    parser.add_argument("--vocab", nargs="+", type=int, default=list(DEFAULT_VOCABS), metavar="V")
    parser.add_argument("--k", nargs="+", type=int, default=list(DEFAULT_KS), metavar="K")
    parser.add_argument("--repeats", type=int, default=15, help="timed redraws per cell (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print JSON records instead of the table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from resispec.cli.table import format_table
    from resispec.explore.redraw_timing import bench_redraw

    try:
        results = bench_redraw(args.vocab, args.k, args.repeats, args.seed,
                               progress=lambda line: print(line, file=sys.stderr, flush=True))
    except ValueError as error:
        print(f"resispec bench explore: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2))
        return 0
    rows = [[r.vocab, r.k, f"{r.redraw_ms:.1f}", f"{r.redraw_cpu_ms:.1f}", f"{r.model_ms:.1f}",
             f"{r.enumerated}/{r.verifiers}"] for r in results]
    print(format_table(["V", "k", "redraw ms", "redraw CPU ms", "model ms", "laws enumerated"], rows))
    print("\nredraw: Explorer.redraw() (the model, the figures' data and the table), wall and this process's CPU "
          "time (what other jobs on the machine do not inflate); model: model.display(state), wall. Medians of "
          "repeats in this run, each cold; a law is enumerated when its drafting has at most the page's limit of "
          "candidate tuples.")
    return 0
