"""``resispec bench sim``: simulator kernels over many pairs as a multiple of one softmax."""

from __future__ import annotations

import argparse
import sys

from resispec.cli.arguments import positive_int
from resispec.cli.bench import add_ratio_arguments, allocator_note
from resispec.cli.output import strict_json


def register(subparsers: argparse._SubParsersAction) -> None:
    from resispec.sim.bench import (
        DEFAULT_CHUNK,
        DEFAULT_K,
        DEFAULT_PAIRS,
        DEFAULT_REPEATS,
        DEFAULT_VERIFIERS,
        DEFAULT_VOCAB,
    )
    from resispec.sim.kernels import SUPPORTED

    parser = subparsers.add_parser(
        "sim", help="seconds for many pairs through the simulator's kernels, and the multiple of one softmax",
        description="LLM-like pairs in chunks; per chunk the kernel and a softmax over the same target logits "
                    "are timed alternately, medians summed over chunks.")
    parser.add_argument("--verifiers", nargs="+", default=list(DEFAULT_VERIFIERS), choices=SUPPORTED, metavar="NAME",
                        help="verifiers (default: %(default)s)")
    parser.add_argument("--pairs", type=positive_int, default=DEFAULT_PAIRS, help="pairs (default: %(default)s)")
    parser.add_argument("--chunk", type=positive_int, default=DEFAULT_CHUNK,
                        help="pairs per timed chunk (default: %(default)s)")
    add_ratio_arguments(parser, [DEFAULT_VOCAB], [DEFAULT_K], "timed runs per chunk")
    parser.set_defaults(handler=run, repeats=DEFAULT_REPEATS)


def run(args: argparse.Namespace) -> int:
    from resispec.cli.table import format_table
    from resispec.sim.bench import bench_sim

    allocator = allocator_note(args)
    results = [timing for vocab in args.vocab for k in args.k
               for timing in bench_sim(args.verifiers, args.pairs, vocab, k, args.chunk, args.repeats, args.seed,
                                       progress=lambda line: print(line, file=sys.stderr, flush=True))]
    if args.json:
        print(strict_json([r.to_dict() for r in results]))
        return 0
    rows = [[r.verifier, r.pairs, r.vocab, r.k, f"{r.seconds:.2f}", f"{r.softmax_seconds:.3f}", f"{r.ratio:.2f}",
             f"{r.pairs_per_second:.0f}"] for r in results]
    print(format_table(["verifier", "pairs", "V", "k", "seconds", "softmax s", "ratio", "pairs/s"], rows))
    print("\nseconds: summed median time of the batched kernel (drift curve, residual drift and acceptance at "
          "every step; row validation included) over chunks of pairs; softmax s: summed median time of "
          "scipy.special.softmax over the same chunks' target logits, timed alternately in this run. " + allocator)
    return 0
