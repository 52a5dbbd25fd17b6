"""Options shared by the commands that load the real model: ``--target PATH``, ``--target-compute``."""

from __future__ import annotations

import argparse

TARGET_HELP = "your own target: a local checkpoint directory or GGUF file (default: the built-in SmolLM2-135M-Instruct)"


def add_target_argument(parser: argparse.ArgumentParser) -> None:
    """``--target PATH`` (``resispec.engine.model.models.load_target(path=...)``; ``--draft`` takes a PATH too)."""
    parser.add_argument("--target", default=None, metavar="PATH", help=TARGET_HELP)


TARGET_COMPUTE_HELP = ("how p is computed from the GGUF: float32 (its weights dequantized, float32 products) or native "
                       "(its 4-bit blocks through integer kernels, bfloat16 products: faster, and p IS that "
                       "computation, not the float32 one; CPU only)")
FASTEST_DEFAULT_HELP = ("; default: native where it applies (a GGUF target on CPU in float32), else float32 (the "
                        "fastest exact computation, resispec.engine.model.models.fastest_target_compute)")


def add_target_compute_argument(parser: argparse.ArgumentParser, several: bool = False,
                                fastest_default: bool = False) -> None:
    """``--target-compute native|float32`` (``resispec.engine.model.models.TARGET_COMPUTES``); ``several``: one or more,
    compared in one run. The default is ``float32`` (the reference), or with ``fastest_default`` None: the
    command resolves it with ``resispec.engine.model.models.fastest_target_compute`` once it knows the device."""
    choices = ("float32", "native")
    default = None if fastest_default else "float32"
    help_text = TARGET_COMPUTE_HELP + (FASTEST_DEFAULT_HELP if fastest_default else "; default: float32")
    if several:
        parser.add_argument("--target-compute", nargs="+", choices=choices, default=default and [default],
                            help=help_text + "; several: each, in one run")
    else:
        parser.add_argument("--target-compute", choices=choices, default=default, help=help_text)
