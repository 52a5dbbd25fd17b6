"""Command-line interface: ``resispec <command> ...``.

Each command lives in its own module that exposes ``register(subparsers)``; the module only parses
arguments and prints, and imports its heavy machinery inside the handler so that ``resispec --help``
stays fast. Add a command by appending its module to ``COMMAND_MODULES``.
"""

from __future__ import annotations

import argparse
import importlib

COMMAND_MODULES: list[str] = [
    "resispec.cli.audit",
    "resispec.cli.audit_stream",
    "resispec.cli.bench",
    "resispec.cli.generate",
    "resispec.cli.theory",
    "resispec.cli.sim",
    "resispec.cli.explore",
    "resispec.cli.log",
    "resispec.cli.audit_log",
]


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every registered command."""
    parser = argparse.ArgumentParser(
        prog="resispec",
        description="Exact multi-candidate speculative sampling: audits, theory, simulation, decoding.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``resispec`` console script; returns the process exit status."""
    args = build_parser().parse_args(argv)
    return int(args.handler(args) or 0)


