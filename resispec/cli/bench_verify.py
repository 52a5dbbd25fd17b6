"""``resispec bench verify``: one verify of each exact verifier as a multiple of one softmax."""

from __future__ import annotations

import argparse
import sys

from resispec.cli.arguments import verifier_name
from resispec.cli.bench import add_ratio_arguments, allocator_note
from resispec.cli.output import strict_json


def register(subparsers: argparse._SubParsersAction) -> None:
    from resispec.benchmarks.verify_speed import DEFAULT_KS, DEFAULT_VOCABS

    parser = subparsers.add_parser(
        "verify", help="median verify time / median softmax time over the same vocabulary",
        description="LLM-like peaky pairs; ratios of medians measured alternately in one run.",
    )
    parser.add_argument("--verifier", nargs="+", type=verifier_name, metavar="NAME",
                        help="verifiers (default: every exact one)")
    add_ratio_arguments(parser, list(DEFAULT_VOCABS), list(DEFAULT_KS), "timed calls per cell")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from resispec.benchmarks.verify_speed import bench_verify
    from resispec.cli.table import format_table

    allocator = allocator_note(args)
    results = bench_verify(args.verifier, args.vocab, args.k, args.repeats, args.seed,
                           progress=lambda line: print(line, file=sys.stderr, flush=True))
    if args.json:
        print(strict_json([r.to_dict() for r in results]))
        return 0
    ks = sorted({r.k for r in results})
    cells = {(r.verifier, r.vocab, r.k): r for r in results}
    rows = []
    for vocab in args.vocab:
        for name in dict.fromkeys(r.verifier for r in results):
            ratios = [f"{cells[name, vocab, k].ratio:.2f}" if (name, vocab, k) in cells else "-" for k in ks]
            softmax_us = next(r.softmax_seconds for r in results if r.vocab == vocab) * 1e6
            rows.append([vocab, name, *ratios, f"{softmax_us:.0f}"])
    print(format_table(["V", "verifier", *[f"k={k}" for k in ks], "softmax us"], rows))
    print("\ncells: median time of one verify (validation and schedule included) / median time of "
          "scipy.special.softmax on a length-V vector, timed alternately in this run. " + allocator)
    return 0
