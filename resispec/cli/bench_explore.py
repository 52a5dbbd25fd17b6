"""``resispec bench explore``: the explorer's redraw time per (V, k), medians in milliseconds."""

from __future__ import annotations

import argparse
import sys

from resispec.cli.arguments import integer_in, nonneg_seed, positive_int
from resispec.cli.output import strict_json


def register(subparsers: argparse._SubParsersAction) -> None:
    from resispec.explore.model import MAX_K, MAX_VOCAB
    from resispec.explore.redraw_timing import DEFAULT_KS, DEFAULT_VOCABS

    parser = subparsers.add_parser(
        "explore", help="resispec explore: median server-side redraw time of an edit per (V, k)",
        description="Dirichlet(1) pairs, every registered verifier selected; the browser's rendering is not included.")
    parser.add_argument("--vocab", nargs="+", type=integer_in(2, MAX_VOCAB, "a vocabulary size V"),
                        default=list(DEFAULT_VOCABS), metavar="V")
    parser.add_argument("--k", nargs="+", type=integer_in(1, MAX_K, "a candidate count k"), default=list(DEFAULT_KS),
                        metavar="K")
    parser.add_argument("--repeats", type=positive_int, default=15,
                        help="timed redraws per cell (default: %(default)s)")
    parser.add_argument("--seed", type=nonneg_seed, default=0)
    parser.add_argument("--json", action="store_true", help="print JSON records instead of the table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from resispec.cli.table import format_table
    from resispec.explore.redraw_timing import bench_redraw

    results = bench_redraw(args.vocab, args.k, args.repeats, args.seed,
                           progress=lambda line: print(line, file=sys.stderr, flush=True))
    if args.json:
        print(strict_json([r.to_dict() for r in results]))
        return 0
    rows = [[r.vocab, r.k, f"{r.redraw_ms:.1f}", f"{r.redraw_cpu_ms:.1f}", f"{r.model_ms:.1f}",
             f"{r.enumerated}/{r.verifiers}"] for r in results]
    print(format_table(["V", "k", "redraw ms", "redraw CPU ms", "model ms", "laws enumerated"], rows))
    print("\nredraw: Explorer.redraw() (the model, the figures' data and the table), wall and this process's CPU "
          "time (what other jobs on the machine do not inflate); model: model.display(state), wall. Medians of "
          "repeats in this run, each cold; a law is enumerated when its drafting has at most the page's limit of "
          "candidate tuples.")
    return 0
