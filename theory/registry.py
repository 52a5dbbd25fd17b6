"""The theorem record and the list of theorem families.

Each family is one module named after its verifier; it exposes ``THEOREMS``, a list of ``Theorem``.
Add a family by appending its module to ``FAMILIES``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

FAMILIES: list[str] = [
    "resispec.theory.rejection.sps",
    "resispec.theory.rejection.rrs",
    "resispec.theory.rejection.rrs_wor",
    "resispec.theory.resispec_wor.resispec_wor",
    "resispec.theory.spectr.spectr",
    "resispec.theory.topk.topk",
    "resispec.theory.resispec.resispec",
    "resispec.theory.bounds.iid_optimum",
    "resispec.theory.pooled.pooled",
    "resispec.theory.partial_resolution.partial_resolution",
    "resispec.theory.pooled_wor.pooled_wor",
    "resispec.theory.controls.resispec_paper",
    "resispec.theory.sequence.tree",
    "resispec.theory.sequence.block",
    "resispec.theory.sequence.traversal",
    "resispec.theory.sequence.gbv",
    "resispec.theory.sequence.round_lp",
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


# What kind of proof stands behind a claim (docs/theory.md explains each).
FORMAL = "formal proof (Coq)"
SYMBOLIC = "general proof (symbolic)"
HAND = "hand proof + instance certificates"
NUMERIC = "numeric check"
LABELS: dict[str, str] = {
    FORMAL: "the general statement (every finite token type, every k) is a theorem of the Coq/MathComp "
    "development in `theory/coq`, compiled with no axioms; the SymPy and exact-rational checks remain "
    "as independent evidence",
    SYMBOLIC: "the general step is an identity SymPy proves for symbolic values (all V, all k)",
    HAND: "the general step is the hand proof written under Derivation; the machine checks its "
    "ingredients symbolically at fixed small sizes and certifies it in exact rationals on instances",
    NUMERIC: "checked on instances only (exact rationals or floating point): evidence, not a proof",
}


@dataclass(frozen=True)
class Theorem:
    """A claim about a verifier, how it is checked, and the check itself.

    ``label``: the kind of proof behind the claim (one of ``LABELS``; families that do not say get
    ``HAND``); ``formal``: the Coq theorems (``resispec.theory.formal.FORMAL``) that prove it or part of it.
    """

    name: str
    statement: str
    method: str
    check: Callable[[], Outcome]
    label: str = HAND
    formal: tuple[str, ...] = ()


def tally(problems: list[str]) -> str:
    """``"0 failures"``, or the count and the first problem, for the "what was checked" text."""
    return f"{len(problems)} failures" + (f" (first: {problems[0]})" if problems else "")


def all_theorems() -> list[Theorem]:
    """Every registered theorem, family by family."""
    return [t for module in FAMILIES for t in importlib.import_module(module).THEOREMS]
