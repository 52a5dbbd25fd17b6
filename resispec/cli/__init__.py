"""Command-line interface: ``resispec <command> ...``.

Each command lives in its own module that exposes ``register(subparsers)``; the module only parses
arguments and prints, and imports its heavy machinery inside the handler so that ``resispec --help``
stays fast. Add a command by appending its module to ``COMMAND_MODULES``; build its options with the
types of ``resispec.cli.arguments`` and print JSON with ``resispec.cli.output.strict_json``.
"""

from __future__ import annotations

import argparse
import importlib

from resispec.cli.arguments import OneLineParser, report_error

COMMAND_MODULES: list[str] = [
    "resispec.cli.audit",
    "resispec.cli.audit_stream",
    "resispec.cli.audit_sampler",
    "resispec.cli.bench",
    "resispec.cli.generate",
    "resispec.cli.theory",
    "resispec.cli.sim",
    "resispec.cli.explore",
    "resispec.cli.log",
    "resispec.cli.audit_log",
    "resispec.cli.replay",
    "resispec.cli.train_draft",
]


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every registered command (option types from ``resispec.cli.arguments``)."""
    parser = OneLineParser(
        prog="resispec",
        description="Exact multi-candidate speculative sampling: audits, theory, simulation, decoding.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``resispec`` console script; returns the process exit status.

    A bad option ends in argparse's one-line error (exit 2). A ``ValueError`` from the API (its
    validation layer: every message names the argument) or an ``OSError`` (a file that cannot be read
    or written) is a user's mistake too: one line on stderr, exit 2, no traceback.
    """
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help (0) or a bad option (2, its one line already printed)
        return int(done.code or 0)
    try:
        return int(args.handler(args) or 0)
    except (ValueError, OSError) as error:
        return report_error(args.command, error)


