"""``resispec bench torch-verify``: one batched torch verify per verifier as a multiple of one softmax."""

from __future__ import annotations

import argparse
import json
import sys


def register(bench_subparsers: argparse._SubParsersAction) -> None:
    parser = bench_subparsers.add_parser(
        "torch-verify", help="median batched torch verify time / median batched softmax time, (B, V) nodes",
        description="LLM-like peaky float32 pairs; ratios of medians measured alternately in one run.",
    )
    parser.add_argument("--verifier", nargs="+", metavar="NAME", help="verifiers (default: every torch port)")
    parser.add_argument("--batch", type=int, default=64, help="nodes B (default: %(default)s)")
    parser.add_argument("--vocab", type=int, default=49152, help="vocabulary V (default: %(default)s)")
    parser.add_argument("--k", type=int, default=4, help="candidates per node (default: %(default)s; sps: 1)")
    parser.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=25, help="timed calls per verifier (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (default: %(default)s; on a shared machine a second thread makes the medians swing)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--default-allocator", action="store_true",
                        help="keep glibc's default thresholds (CPU timings then include page faults)")
    parser.add_argument("--json", action="store_true", help="print JSON records instead of the table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from engine.bench_verifiers import bench_torch_verify
    from resispec.benchmarks.allocator import steady_allocator
    from resispec.cli.table import format_table

    steady = not args.default_allocator and steady_allocator()
    torch.set_num_threads(args.threads)
    results = bench_torch_verify(args.verifier, args.batch, args.vocab, args.k, args.repeats, args.seed,
                                 args.device, progress=lambda line: print(line, file=sys.stderr, flush=True))
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2))
        return 0
    rows = [[r.verifier, r.k, f"{r.ratio:.2f}", f"{r.verify_seconds * 1e3:.2f}", f"{r.softmax_seconds * 1e3:.2f}"]
            for r in results]
    print(format_table(["verifier", "k", "x softmax", "verify ms", "softmax ms"], rows))
    print(f"\ncells: median time of one batched verify of B = {args.batch} nodes at V = {args.vocab} on "
          f"{args.device} ({args.threads} CPU threads; validation and per-node plan included) / median time of "
          "torch.softmax over the same float32 (B, V) logits, timed alternately in this run. Allocator: "
          + ("steady (glibc trim/mmap thresholds raised)." if steady else "default."))
    return 0
