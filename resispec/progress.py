"""Progress of long work on stderr, on a terminal or not: the one progress reporter of every command.

On a terminal, where tqdm is installed, a tqdm bar (imported only then: tqdm is an optional dependency, so a bare
``pip install resispec`` runs every command). Anywhere else (a pipe, a log file, CI, a terminal without tqdm):
one plain line every ``RESISPEC_PROGRESS_SECONDS`` seconds (default 10) while the work lasts, and one when it
ends if a line was printed, each with the count, the share done, the time spent and, where the total is known,
an estimate of the time left: ``rows: 40000/100000 rows (40 %), 21 s, about 32 s left``. Work shorter than the
interval prints nothing. ``disable``: ``None`` reports as above, ``True`` never, ``False`` always as lines
(``Progress(..., disable=False)`` where the caller wants lines on a terminal too).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import IO, Any, TypeVar

T = TypeVar("T")
DEFAULT_SECONDS = 10.0
"""Seconds between two progress lines off a terminal (``RESISPEC_PROGRESS_SECONDS`` overrides)."""


def interval() -> float:
    """The seconds between two progress lines: ``$RESISPEC_PROGRESS_SECONDS`` (a number >= 0), else 10."""
    value = os.environ.get("RESISPEC_PROGRESS_SECONDS", "")
    try:
        seconds = float(value) if value else DEFAULT_SECONDS
    except ValueError:
        raise ValueError(f"RESISPEC_PROGRESS_SECONDS: expected a number of seconds >= 0, got {value!r}") from None
    if not seconds >= 0:
        raise ValueError(f"RESISPEC_PROGRESS_SECONDS: expected a number of seconds >= 0, got {value!r}")
    return seconds


def duration(seconds: float) -> str:
    """``seconds`` for a person: ``42 s``, ``3 min 5 s``, ``1 h 2 min``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _bar(total: float | None, desc: str, unit: str, file: IO[str], unit_scale: bool) -> Any | None:
    """A tqdm bar if ``file`` is a terminal and tqdm is installed, else None."""
    if not getattr(file, "isatty", lambda: False)():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit=unit, file=file, unit_scale=unit_scale, mininterval=0.5)


class Progress:
    """Counts work done toward ``total`` (None: unknown) and reports it on ``file`` (default stderr; module doc).
    Use as a context manager, or call ``close()``."""

    def __init__(self, total: float | None = None, desc: str = "", unit: str = "it", file: IO[str] | None = None,
                 disable: bool | None = None, unit_scale: bool = False) -> None:
        self.total, self.desc, self.unit, self.n = total, desc, unit, 0
        self.file = file or sys.stderr
        self.postfix = ""
        self.started = self.last = time.monotonic()
        self.every = interval()
        self.printed = False
        self.disabled = disable is True
        self.bar = None if disable is not None else _bar(total, desc, unit, self.file, unit_scale)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def line(self) -> str:
        """The progress line now: count, share, time spent and, with a total, the estimated time left."""
        spent = time.monotonic() - self.started
        count = f"{self.n:g}/{self.total:g} {self.unit}" if self.total else f"{self.n:g} {self.unit}"
        share = f" ({100 * self.n / self.total:.0f} %)" if self.total else ""
        left = ""
        if self.total and 0 < self.n < self.total:
            left = f", about {duration(spent * (self.total - self.n) / self.n)} left"
        postfix = f" [{self.postfix}]" if self.postfix else ""
        return f"{self.desc}: {count}{share}, {duration(spent)}{left}{postfix}"

    def _report(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.disabled or self.bar is not None or not (force or now - self.last >= self.every):
            return
        self.last, self.printed = now, True
        print(self.line(), file=self.file, flush=True)

    def update(self, n: float = 1) -> None:
        self.n += n
        if self.bar is not None:
            self.bar.update(n)
        self._report()

    def set_postfix_str(self, text: str) -> None:
        """A short note on the current stage, shown after the counts."""
        self.postfix = text
        if self.bar is not None:
            self.bar.set_postfix_str(text)
        self._report()

    def set_total(self, total: float) -> None:
        self.total = total
        if self.bar is not None:
            self.bar.total = total
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        elif self.printed:
            self.postfix = "done"
            self._report(force=True)
        self.disabled = True


def progress(iterable: Iterable[T], total: float | None = None, desc: str = "", unit: str = "it",
             disable: bool | None = None) -> Iterator[T]:
    """The items of ``iterable``, reporting each one done (``total`` defaults to ``len(iterable)`` if it has
    one)."""
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    with Progress(total, desc, unit, disable=disable) as bar:
        for item in iterable:
            yield item
            bar.update()
