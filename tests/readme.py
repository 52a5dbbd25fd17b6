"""The README as tests read it: its sections by heading."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_section(heading: str) -> str:
    """The README's text from the line ``heading`` to the next heading of the same level."""
    text = README.read_text()
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start: end if end >= 0 else len(text)]
