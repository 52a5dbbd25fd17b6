"""Plain-text tables and paragraphs for the CLI, kept within ``WIDTH`` columns where they can be."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

WIDTH = 100
"""The columns a paragraph wraps at, and a wide table is split to (a terminal's or a log viewer's width)."""


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int | None = None,
                 keys: int = 0) -> str:
    """Columns padded to their widest cell, a rule under the header. With ``width``, a table wider than that is
    printed as blocks of columns, one under the other, each within ``width`` where the cells allow and each
    repeating the first ``keys`` columns (the ones that name a row)."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    blocks = [list(range(len(headers)))]
    if width is not None and sum(widths) + 2 * (len(widths) - 1) > width:
        blocks, used = [], None
        for column in range(keys, len(headers)):
            if used is None or used + 2 + widths[column] > width:
                blocks.append(list(range(keys)))
                used = sum(widths[:keys]) + 2 * keys - 2
            blocks[-1].append(column)
            used += 2 + widths[column]

    def line(cells: Sequence, columns: Sequence[int]) -> str:
        return "  ".join(str(cells[c]).ljust(widths[c]) for c in columns).rstrip()

    return "\n\n".join("\n".join([line(headers, columns), line(["-" * w for w in widths], columns),
                                  *(line(row, columns) for row in rows)]) for columns in blocks)


def wrap(text: str, width: int = WIDTH) -> str:
    """``text`` as lines of at most ``width`` columns (words never split)."""
    return textwrap.fill(text, width, break_long_words=False, break_on_hyphens=False)


def fixed(value: float, digits: int = 4, sign: bool = False) -> str:
    """``value`` to ``digits`` decimals (with its sign always shown if ``sign``), '-' for NaN (not defined or
    not computed); a value that rounds to zero prints as zero, never ``-0.0000``."""
    if value != value:
        return "-"
    spec = f"{'+' if sign else ''}.{digits}f"
    text = format(value, spec)
    return format(0.0, spec) if float(text) == 0 else text
