"""``resispec theory``: run every machine-checked derivation (see the ``theory`` package)."""

from __future__ import annotations

import argparse

from resispec.cli.arguments import output_file


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "theory", help="check every exactness and optimality theorem; regenerate docs/theory.md"
    )
    parser.add_argument("--docs", type=output_file, default=None, help="Markdown output (default: docs/theory.md)")
    parser.add_argument("--no-docs", action="store_true", help="do not write the Markdown")
    parser.add_argument("--no-coq", action="store_true", help="do not compile the Coq development")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from resispec.theory import main

    argv = ["--no-docs"] * args.no_docs + ["--no-coq"] * args.no_coq
    if args.docs is not None:
        argv += ["--docs", str(args.docs)]
    return main(argv)
