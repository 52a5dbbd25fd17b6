"""The README and the docs pages as tests read them: their sections by heading."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def doc_section(path: Path, heading: str) -> str:
    """The text of ``path`` from the line ``heading`` to the next heading of the same level or above."""
    text = path.read_text()
    start = text.index(f"\n{heading}\n")
    level = heading.split(" ", 1)[0]
    ends = [text.find(f"\n{'#' * depth} ", start + 1) for depth in range(1, len(level) + 1)]
    ends = [end for end in ends if end >= 0]
    return text[start: min(ends) if ends else len(text)]


def readme_section(heading: str) -> str:
    """The README's text from the line ``heading`` to the next heading of the same level or above."""
    return doc_section(README, heading)
