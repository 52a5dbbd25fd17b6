"""The README's figures that the code produces cannot go stale: its theorem count is the number of theorems
``python -m resispec.theory`` runs; its sample ``resispec audit`` table is checked against the default audit where that
audit runs (tests/resispec/audit/test_controls_and_audits.py, with ``tests.readme.readme_section``)."""

from __future__ import annotations

import re
import shlex

from resispec.cli import build_parser
from resispec.theory.registry import all_theorems
from tests.readme import ROOT, readme_section


def test_the_readme_counts_the_theorems_python_m_theory_runs():
    section = readme_section("## The theory: `resispec theory`")
    claimed = re.search(r"\): (\d+) theorems\s", section)
    assert claimed and int(claimed.group(1)) == len(all_theorems()), (claimed and claimed.group(0), len(all_theorems()))


README = ROOT / "README.md"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_a_guide_of_at_most_200_lines():
    assert len(README.read_text().splitlines()) <= 200


def test_every_link_of_the_readme_and_the_docs_resolves():
    pages = [README, *sorted((ROOT / "docs").rglob("*.md"))]
    broken = [f"{page.relative_to(ROOT)} -> {target}" for page in pages for target in LINK.findall(page.read_text())
              if "://" not in target and not (page.parent / target).exists()]
    assert not broken, broken


def test_the_docs_index_lists_every_page():
    index = (ROOT / "docs" / "index.md").read_text()
    linked = {(ROOT / "docs" / target).resolve() for target in LINK.findall(index)}
    missing = [str(page.relative_to(ROOT)) for page in sorted((ROOT / "docs").rglob("*.md"))
               if page.name != "index.md" and page.resolve() not in linked]
    assert not missing, f"docs/index.md: add {missing}"


def test_every_quick_start_command_parses():
    """Each command of the README's quick-start table is one the CLI takes, as written (``FILE.py:fn`` stands for
    the user's sampler, ``...`` for a prompt)."""
    section = readme_section("## Quick start")
    commands = re.findall(r"^\| `(resispec [^`]+)` \|", section, flags=re.M)
    assert len(commands) >= 8 and commands[0].startswith("resispec audit-sampler")
    parser = build_parser()
    for command in commands:
        argv = shlex.split(command.replace("FILE.py:fn", "sampler.py:fn"))[1:]
        assert parser.parse_args(argv).handler, command
    times = re.findall(r"\| ([^|]*) \| ([^|]*) \|$", section, flags=re.M)[2:]
    assert times and all(cold.strip() and warm.strip() for cold, warm in times)
