"""``resispec explore``: the interactive drift explorer in the browser (``resispec.explore``)."""

from __future__ import annotations

import argparse

from resispec.cli.arguments import port


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("explore", help="residual drift you can see and touch, in the browser")
    parser.add_argument("--port", type=port, default=5006, help="port to serve on (default 5006)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from resispec.explore.server import check_address

    check_address(args.host, args.port)  # AddressError, a ValueError: one line, exit 2
    try:
        from resispec.explore.server import serve
    except ImportError as error:
        raise ValueError(f"needs the explore extra (pip install 'resispec[explore]'): {error}") from None
    serve(args.host, args.port, not args.no_browser)
    # serve returns only once the server stopped, on Ctrl-C (the server catches the interrupt itself): end as
    # every command ends on Ctrl-C, with one line and exit 130 (resispec.cli.main)
    raise KeyboardInterrupt
