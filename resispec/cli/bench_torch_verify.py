"""``resispec bench torch-verify``: one batched torch verify per verifier as a multiple of one softmax.

Defaults: B = 64 nodes at V = 49152 with k = 4 candidates (torch is imported only by the handler).
"""

from __future__ import annotations

import argparse
import sys

from resispec.cli.arguments import device, positive_int, thread_count, verifier_name
from resispec.cli.bench import add_ratio_arguments, allocator_note
from resispec.cli.output import strict_json


def register(bench_subparsers: argparse._SubParsersAction) -> None:
    parser = bench_subparsers.add_parser(
        "torch-verify", help="median batched torch verify time / median batched softmax time, (B, V) nodes",
        description="LLM-like peaky float32 pairs; ratios of medians measured alternately in one run.",
    )
    parser.add_argument("--verifier", nargs="+", type=verifier_name, metavar="NAME",
                        help="verifiers (default: every verifier of the zoo)")
    parser.add_argument("--batch", type=positive_int, default=64, help="nodes B (default: %(default)s)")
    parser.add_argument("--device", type=device, default="cpu",
                        help="torch device, e.g. cpu or cuda (default: %(default)s)")
    parser.add_argument("--threads", type=thread_count, default=1,
                        help="torch CPU threads (default: %(default)s; on a shared machine a second thread "
                             "makes the medians swing)")
    add_ratio_arguments(parser, [49152], [4], "timed calls per verifier (sps runs at k = 1)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from resispec.cli.table import format_table
    from resispec.engine.bench.bench_verifiers import bench_torch_verify

    allocator = allocator_note(args)
    torch.set_num_threads(args.threads)
    results = bench_torch_verify(args.verifier, args.batch, args.vocab, args.k, args.repeats, args.seed,
                                 args.device, progress=lambda line: print(line, file=sys.stderr, flush=True))
    if args.json:
        print(strict_json([r.to_dict() for r in results]))
        return 0
    rows = [[r.vocab, r.verifier, r.k, f"{r.ratio:.2f}", f"{r.verify_seconds * 1e3:.2f}",
             f"{r.softmax_seconds * 1e3:.2f}"] for r in results]
    print(format_table(["V", "verifier", "k", "x softmax", "verify ms", "softmax ms"], rows))
    print(f"\ncells: median time of one batched verify of B = {args.batch} nodes on {args.device} "
          f"({args.threads} CPU thread(s); validation and per-node plans included) / median time of "
          "torch.softmax over the same float32 (B, V) logits, timed alternately in this run. " + allocator)
    return 0
