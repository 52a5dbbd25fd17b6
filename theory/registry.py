"""The theorem record and the list of theorem families.

Each family is one module named after its verifier; it exposes ``THEOREMS``, a list of ``Theorem``.
Add a family by appending its module to ``FAMILIES``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

FAMILIES: list[str] = [
    "theory.sps",
    "theory.rrs",
    "theory.rrs_wor",
    "theory.resispec_wor",
    "theory.spectr",
    "theory.topk",
    "theory.resispec",
    "theory.iid_optimum",
    "theory.pooled",
    "theory.pooled_wor",
    "theory.resispec_paper",
    "theory.tree",
    "theory.block",
    "theory.traversal",
]


@dataclass(frozen=True)
class Outcome:
    """The result of checking one theorem.

    ``derivation``: the argument, in Markdown with SymPy-rendered display formulas;
    ``checked``: what exactly the machine verified (identities, cases, instance counts).
    """

    passed: bool
    derivation: str
    checked: str


@dataclass(frozen=True)
class Theorem:
    """A claim about a verifier, how it is checked, and the check itself."""

    name: str
    statement: str
    method: str
    check: Callable[[], Outcome]


def tally(problems: list[str]) -> str:
    """``"0 failures"``, or the count and the first problem, for the "what was checked" text."""
    return f"{len(problems)} failures" + (f" (first: {problems[0]})" if problems else "")


def all_theorems() -> list[Theorem]:
    """Every registered theorem, family by family."""
    return [t for module in FAMILIES for t in importlib.import_module(module).THEOREMS]
