"""``resispec bench pooled``: pooled's plan build and one tuple's verify as multiples of one softmax."""

from __future__ import annotations

import argparse
import sys

from resispec.cli.bench import add_ratio_arguments, allocator_note
from resispec.cli.output import strict_json


def register(subparsers: argparse._SubParsersAction) -> None:
    from resispec.benchmarks.pooled_speed import DEFAULT_KS, DEFAULT_VOCABS

    parser = subparsers.add_parser(
        "pooled", help="pooled: median plan-build and per-tuple times / median softmax time",
        description="LLM-like peaky pairs; ratios of medians measured alternately in one run.",
    )
    add_ratio_arguments(parser, list(DEFAULT_VOCABS), list(DEFAULT_KS), "timed builds per cell; 20x as many tuples")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from resispec.benchmarks.pooled_speed import bench_pooled
    from resispec.cli.table import format_table

    allocator = allocator_note(args)
    results = bench_pooled(args.vocab, args.k, args.repeats, args.seed,
                           progress=lambda line: print(line, file=sys.stderr, flush=True))
    if args.json:
        print(strict_json([r.to_dict() for r in results]))
        return 0
    rows = [[r.vocab, r.k, r.pools, f"{r.build_ratio:.1f}", f"{r.tuple_ratio:.3f}", f"{r.softmax_seconds * 1e6:.0f}",
             f"{r.build_seconds * 1e3:.2f}", f"{r.tuple_seconds * 1e6:.1f}"] for r in results]
    print(format_table(["V", "k", "pools", "build / softmax", "tuple / softmax", "softmax us", "build ms",
                        "tuple us"], rows))
    print("\nbuild: Pooled().bind(p, q, k) (validation, sort, cut, t, pools); tuple: bound.verify(candidates, u) "
          "on that plan. Ratios of medians, each timed alternately with scipy.special.softmax on the same "
          "length-V logits in this run. " + allocator)
    return 0
