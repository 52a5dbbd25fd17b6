"""The CLI's one validation layer: argparse ``type=`` functions that parse an option and check its range.

Every command builds its options from these, so a user's mistake (a negative seed, ``--top-p 2``, an
unknown verifier, an output path that cannot be created) ends at parse time, before any model loads
or any work starts, as one line on stderr and exit status 2 (``OneLineParser``). Ranges and limits
come from ``resispec.limits``. Checks that involve several options or the API's own rules (a tree
wider than the verifier takes) are the API's ``ValueError``s, which ``resispec.cli.main`` turns into
the same one-line error.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from pathlib import Path
from typing import NoReturn

from resispec.limits import (
    MAX_AUDIT_SAMPLES,
    MAX_CANDIDATES,
    MAX_THREADS,
    MAX_TIME_LIMIT,
    MAX_VOCAB,
    MIN_TEMPERATURE,
    check_tree_size,
)

MAX_SEED = 2**63 - 1
"""Seeds lie in ``[0, MAX_SEED]`` (what both NumPy's ``default_rng`` and ``torch.manual_seed`` take)."""

DEVICE_PATTERN = re.compile(r"cpu|cuda(:\d+)?|mps|xpu(:\d+)?")
"""Torch device strings the engine runs on (checked without importing torch)."""


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr (``prog: error: message``), exit 2.

    argparse's default prints the whole usage first; one line is what the CLI promises for every
    user mistake. ``--help`` still prints the usage. Subparsers inherit the class.
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def fail(message: str) -> NoReturn:
    """Raise the error argparse reports for a bad option value (``argument --x: message``)."""
    raise argparse.ArgumentTypeError(message)


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        fail(f"expected an integer, got {text!r}")


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        fail(f"expected a number, got {text!r}")
    if not math.isfinite(value):
        fail(f"expected a finite number, got {text!r}")
    return value


def integer_in(low: int, high: int | None = None, what: str = "an integer"):
    """A type for integers in ``[low, high]`` (``high`` None: no upper bound)."""
    def parse(text: str) -> int:
        value = _integer(text)
        if value < low or (high is not None and value > high):
            fail(f"expected {what} >= {low}, got {value}" if high is None else
                 f"expected {what} in [{low}, {high}], got {value}")
        return value

    parse.__name__ = what
    return parse


positive_int = integer_in(1, what="an integer")
"""An integer >= 1 (counts: samples, pairs, repeats, batch, threads, new tokens, ...)."""

nonneg_seed = integer_in(0, MAX_SEED, what="a seed")
"""A seed in ``[0, 2**63 - 1]``."""

candidate_count = integer_in(1, MAX_CANDIDATES, what="a candidate count k")
"""k in ``[1, MAX_CANDIDATES]``."""

thread_count = integer_in(1, MAX_THREADS, what="a thread count")
"""Torch CPU threads in ``[1, MAX_THREADS]``."""

audit_samples = integer_in(1, MAX_AUDIT_SAMPLES, what="a sample count")
"""Samples per context of an audit, in ``[1, MAX_AUDIT_SAMPLES]``."""

vocab_size = integer_in(2, MAX_VOCAB, what="a vocabulary size V")
"""V in ``[2, MAX_VOCAB]``."""


def probability(text: str) -> float:
    """A number in ``[0, 1]`` (a fraction)."""
    value = _number(text)
    if not 0.0 <= value <= 1.0:
        fail(f"expected a fraction in [0, 1], got {value}")
    return value


def top_p(text: str) -> float:
    """A nucleus mass in ``(0, 1]``."""
    value = _number(text)
    if not 0.0 < value <= 1.0:
        fail(f"expected a nucleus mass in (0, 1], got {value}")
    return value


def temperature(text: str) -> float:
    """A finite temperature, 0 (greedy) or at least ``MIN_TEMPERATURE``."""
    value = _number(text)
    if value < 0 or 0 < value < MIN_TEMPERATURE:
        fail(f"expected a temperature of 0 (greedy) or >= {MIN_TEMPERATURE:g} (MIN_TEMPERATURE), got {value}")
    return value


def significance(text: str) -> float:
    """A significance level in ``(0, 1)``."""
    value = _number(text)
    if not 0.0 < value < 1.0:
        fail(f"expected a significance level in (0, 1), got {value}")
    return value


def any_number(text: str) -> float:
    """A finite number."""
    return _number(text)


port = integer_in(0, 65535, what="a port")
"""A TCP port in ``[0, 65535]`` (0: let the system choose)."""


def branching(text: str) -> tuple[int, ...]:
    """``"4,2,2,1"`` -> (4, 2, 2, 1): children per node at each depth, at most ``MAX_TREE_NODES`` nodes."""
    try:
        shape = tuple(int(part) for part in text.split(","))
    except ValueError:
        fail(f"expected comma-separated integers like 4,2,2,1, got {text!r}")
    try:
        check_tree_size(shape)
    except ValueError as error:
        fail(str(error).removeprefix("tree: "))
    return shape


def tree_shape(text: str) -> tuple[int, ...] | str:
    """A `branching`, or ``"auto"`` (the engine chooses the tree)."""
    return text if text == "auto" else branching(text)


def number_above(low: float, inclusive: bool = False, what: str = "a number"):
    """A type for finite numbers > ``low`` (>= ``low`` with ``inclusive``)."""
    def parse(text: str) -> float:
        value = _number(text)
        if value < low or (value == low and not inclusive):
            fail(f"expected {what} {'>=' if inclusive else '>'} {low:g}, got {text!r}")
        return value

    parse.__name__ = what
    return parse


positive_number = number_above(0.0, what="a number")
"""A finite number > 0 (a ratio, a goal)."""

nonnegative_number = number_above(0.0, inclusive=True, what="a number")
"""A finite number >= 0 (a cost fraction)."""

positive_seconds = number_above(0.0, what="a number of seconds")
"""A finite number of seconds > 0."""


def time_limit(text: str) -> float:
    """Seconds in ``(0, MAX_TIME_LIMIT]``."""
    value = positive_seconds(text)
    if value > MAX_TIME_LIMIT:
        fail(f"expected at most {MAX_TIME_LIMIT:g} seconds (MAX_TIME_LIMIT), got {value:g}")
    return value


def verifier_name(text: str) -> str:
    """A name in ``resispec.VERIFIERS``."""
    from resispec.verifiers import VERIFIERS

    if text not in VERIFIERS:
        fail(f"unknown verifier {text!r}; known: {', '.join(VERIFIERS)}")
    return text


def decoding_verifier(text: str) -> str:
    """A verifier name of the zoo, a sequence-level verifier (``resispec.sequence``), or ``ar`` (plain
    autoregressive sampling, ``resispec.engine.decode.decoding.AUTOREGRESSIVE``)."""
    from resispec.engine.decode.decoding import AUTOREGRESSIVE
    from resispec.sequence import SEQUENCE_VERIFIERS

    return text if text == AUTOREGRESSIVE or text in SEQUENCE_VERIFIERS else verifier_name(text)


def draft_name(text: str) -> str:
    """A draft name of the engine's registry (checked without loading any model)."""
    from resispec.engine.drafts.registry import check_draft_name

    try:
        return check_draft_name(text)
    except ValueError as error:
        fail(str(error).removeprefix("draft: "))


def device(text: str) -> str:
    """A torch device string: cpu, cuda[:N], mps or xpu[:N] (availability is checked before loading)."""
    if not DEVICE_PATTERN.fullmatch(text):
        fail(f"expected a torch device (cpu, cuda, cuda:N, mps, xpu), got {text!r}")
    return text


def check_device(name: str) -> None:
    """``ValueError`` unless torch can run on the device ``name`` here (call before loading a model)."""
    import torch

    kind = torch.device(name).type
    backend = getattr(torch, kind, None) if kind != "cpu" else None
    if kind != "cpu" and not (backend is not None and backend.is_available()):
        raise ValueError(f"--device: {name} is not available on this machine")


def nonempty_text(text: str) -> str:
    """A string with at least one non-space character, valid UTF-8 (argv bytes that are not arrive as lone
    surrogates)."""
    if not text.strip():
        fail("expected a non-empty text")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        byte = ord(text[error.start]) - 0xDC00 if 0xDC80 <= ord(text[error.start]) <= 0xDCFF else None
        what = f"byte 0x{byte:02x}" if byte is not None else f"{text[error.start]!r}"
        fail(f"not UTF-8 text ({what} at character {error.start})")
    return text


def output_file(text: str) -> Path:
    """A file path that can be written: not a directory, in an existing writable folder."""
    path = Path(text)
    if path.is_dir() or text.endswith(os.sep):
        fail(f"{text} is a directory; expected a file path")
    folder = path.parent.absolute()
    if not folder.is_dir():
        problem = "is not a directory" if folder.exists() else "does not exist"
        fail(f"cannot write {text}: its folder {folder} {problem}")
    _creatable(folder, text)
    return path


def output_dir(text: str) -> Path:
    """A directory that exists or can be created (every existing ancestor is a writable directory)."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        fail(f"{text} exists and is not a directory")
    _creatable(path, text)
    return path


def _creatable(folder: Path, text: str) -> None:
    """``fail`` unless ``folder`` is, or can be created as, a writable directory."""
    existing = folder.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        fail(f"cannot write {text}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        fail(f"cannot write {text}: {existing} is not writable")


def report_error(command: str, error: BaseException) -> int:
    """Print ``resispec <command>: error: <message>`` as one line on stderr; return exit status 2."""
    print(f"resispec {command}: error: {' '.join(str(error).split())}", file=sys.stderr)
    return 2
