"""Command-line interface: ``resispec <command> ...``.

Each command lives in its own module that exposes ``register(subparsers)``; the module only parses
arguments and prints, and imports its heavy machinery inside the handler so that ``resispec --help``
stays fast. Add a command by appending its module to ``COMMAND_MODULES``; build its options with the
types of ``resispec.cli.arguments`` and print JSON with ``resispec.cli.output.strict_json``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from resispec import __version__
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
    parser.add_argument("--version", action="version", version=f"resispec {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


SUBCOMMAND_DESTS = ("bench", "log_command", "sim_command")
"""The ``dest`` of each command's own subparsers (``resispec bench verify``, ``log synth``, ``sim drift``)."""

INTERRUPTED_STATUS = 130
"""Exit status after SIGINT (128 + 2, the shell's convention)."""


def command_name(args: argparse.Namespace) -> str:
    """``generate``, ``log synth``, ``bench verify``: the words after ``resispec`` in the error line."""
    return " ".join([args.command, *(getattr(args, dest) for dest in SUBCOMMAND_DESTS if getattr(args, dest, None))])


def _interrupted(prog: str) -> int:
    print(f"{prog}: interrupted; nothing half-written is left", file=sys.stderr)
    return INTERRUPTED_STATUS


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``resispec`` console script; returns the process exit status.

    The CLI's one error path, one format (``resispec <command>: error: <message>``, one line on stderr):
    a bad option ends in argparse's error (exit 2); a ``ValueError`` from the API (its validation layer:
    every message names the argument; ``resispec.audit.NothingTested`` for an audit that tested nothing)
    or an ``OSError`` (a file that cannot be read or written) is a user's mistake too, exit 2, no
    traceback. SIGINT ends a command with one line (``interrupted``, and what the command says it left),
    exit 130: the commands write through ``resispec.formats.atomic``, so an interrupted write leaves
    what was there before.
    """
    if hasattr(sys.stdout, "reconfigure"):  # each line as it is printed, also into a pipe or a log file
        sys.stdout.reconfigure(line_buffering=True)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help (0) or a bad option (2, its one line already printed)
        return int(done.code or 0)
    except KeyboardInterrupt:
        return _interrupted("resispec")
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        return _interrupted(f"resispec {command_name(args)}")
    except (ValueError, OSError) as error:
        return report_error(command_name(args), error)
