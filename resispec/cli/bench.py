"""``resispec bench <name>``: benchmarks that print ratios measured in one run.

Each benchmark module exposes ``register(bench_subparsers)``; add one by appending it to
``BENCH_MODULES``.
"""

from __future__ import annotations

import argparse
import importlib

BENCH_MODULES: list[str] = [
    "resispec.cli.bench_verify",
    "resispec.cli.bench_sim",
]


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Options every benchmark takes: ``--seed``, ``--default-allocator``, ``--json``."""
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--default-allocator", action="store_true",
                        help="keep glibc's default thresholds (timings then include page faults)")
    parser.add_argument("--json", action="store_true", help="print JSON records instead of the table")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="benchmarks (medians and ratios from one run)")
    bench_subparsers = parser.add_subparsers(dest="bench", required=True, metavar="BENCH")
    for module_name in BENCH_MODULES:
        importlib.import_module(module_name).register(bench_subparsers)
