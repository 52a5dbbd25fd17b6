"""The README's figures that the code produces cannot go stale: its theorem count is the number of theorems
``python -m resispec.theory`` runs; its sample ``resispec audit`` table is checked against the default audit where that
audit runs (tests/resispec/audit/test_controls_and_audits.py, with ``tests.readme.readme_section``)."""

from __future__ import annotations

import re

from resispec.theory.registry import all_theorems
from tests.readme import readme_section


def test_the_readme_counts_the_theorems_python_m_theory_runs():
    section = readme_section("## The theory: `resispec theory`")
    claimed = re.search(r"\): (\d+) theorems\s", section)
    assert claimed and int(claimed.group(1)) == len(all_theorems()), (claimed and claimed.group(0), len(all_theorems()))
