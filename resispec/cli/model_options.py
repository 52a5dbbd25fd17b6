"""Options shared by the commands that load the real model: ``--target PATH``."""

from __future__ import annotations

import argparse

TARGET_HELP = "your own target: a local checkpoint directory or GGUF file (default: the built-in SmolLM2-135M-Instruct)"


def add_target_argument(parser: argparse.ArgumentParser) -> None:
    """``--target PATH`` (``engine.model.models.load_target(path=...)``; ``--draft`` takes a PATH too)."""
    parser.add_argument("--target", default=None, metavar="PATH", help=TARGET_HELP)
