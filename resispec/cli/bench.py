"""``resispec bench <name>``: benchmarks that print ratios measured in one run.

Each benchmark module exposes ``register(bench_subparsers)``; add one by appending it to
``BENCH_MODULES``.
"""

from __future__ import annotations

import argparse
import importlib

from resispec.cli.arguments import candidate_count, nonneg_seed, positive_int, vocab_size

BENCH_MODULES: list[str] = [
    "resispec.cli.bench_verify",
    "resispec.cli.bench_model",
    "resispec.cli.bench_engine",
    "resispec.cli.bench_pooled",
    "resispec.cli.bench_torch_verify",
    "resispec.cli.bench_sim",
    "resispec.cli.bench_draft",
    "resispec.cli.bench_layer_skip",
    "resispec.cli.bench_headroom",
    "resispec.cli.bench_zoo_headroom",
    "resispec.cli.bench_explore",
    "resispec.cli.bench_adaptive",
]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="benchmarks (medians and ratios from one run)")
    bench_subparsers = parser.add_subparsers(dest="bench", required=True, metavar="BENCH")
    for module_name in BENCH_MODULES:
        importlib.import_module(module_name).register(bench_subparsers)


def add_ratio_arguments(parser: argparse.ArgumentParser, vocabs: list[int], ks: list[int], repeats_help: str) -> None:
    """Options shared by the ratio benchmarks: --vocab, --k, --repeats, --seed, --default-allocator, --json."""
    parser.add_argument("--vocab", nargs="+", type=vocab_size, default=vocabs, metavar="V")
    parser.add_argument("--k", nargs="+", type=candidate_count, default=ks, metavar="K")
    parser.add_argument("--repeats", type=positive_int, default=25, help=f"{repeats_help} (default: %(default)s)")
    parser.add_argument("--seed", type=nonneg_seed, default=0)
    parser.add_argument("--default-allocator", action="store_true",
                        help="keep glibc's default thresholds (timings then include page faults)")
    parser.add_argument("--json", action="store_true", help="print JSON records instead of the table")


def allocator_note(args: argparse.Namespace) -> str:
    """Switch to the steady allocator unless ``--default-allocator``; the sentence that says which ran."""
    from resispec.benchmarks.allocator import steady_allocator

    if not args.default_allocator and steady_allocator():
        return "Allocator: steady (glibc trim/mmap thresholds raised: no page faults on either side)."
    return "Allocator: default (timings include page faults from freed blocks returned to the OS)."
