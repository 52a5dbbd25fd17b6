"""Exact law of a verifier's output by enumerating every candidate tuple.

``law(y) = sum_{xbar} P(xbar) * law(y | xbar)``, where ``P(xbar)`` is the drafting probability of the
ordered tuple and ``law(. | xbar)`` the verifier's conditional law (its verification randomness
integrated out). The acceptance is ``sum_{xbar} P(xbar) * P(accept | xbar)``. The cost grows like
``support(q) ** k``, so enumerations past ``max_tuples`` are refused with a clear error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from resispec.limits import MAX_TUPLES
from resispec.validation import as_count

if TYPE_CHECKING:
    from resispec.verifiers.base import BoundVerifier



@dataclass(frozen=True)
class EnumeratedLaw:
    """The exact output law (shape (V,)), the exact acceptance, and how many tuples were visited."""

    law: np.ndarray
    acceptance: float
    tuples: int


def enumerate_law(bound: "BoundVerifier", max_tuples: int = MAX_TUPLES) -> EnumeratedLaw:
    """Enumerate every candidate tuple of ``bound`` (a verifier bound to p, q, k)."""
    max_tuples = as_count(max_tuples, "max_tuples", "tuples")
    verifier, q, k = bound.verifier, bound.q, bound.k
    count = verifier.scheme.tuple_count(q, k)
    if count > max_tuples:
        raise ValueError(
            f"exact enumeration of {verifier.name} would visit {magnitude(count)} candidate tuples "
            f"({verifier.drafting} drafting, support {int(np.count_nonzero(q))}, k = {k}), more than "
            f"the limit max_tuples = {max_tuples}; use a smaller vocabulary or k, or the sampling audit"
        )
    law = np.zeros(bound.p.size)
    acceptance = 0.0
    for candidates, probability in verifier.scheme.tuples(q, k):
        conditional, accepted = verifier._law(bound, np.array(candidates, dtype=np.int64))
        law += probability * conditional
        acceptance += probability * accepted
    return EnumeratedLaw(law=law, acceptance=acceptance, tuples=count)


def magnitude(count: int) -> str:
    """``count`` in decimal, or ``about 10^d`` past 30 digits (Python refuses to print an int of 4300+
    digits, and such a count says nothing more)."""
    if count < 10**30:
        return str(count)
    return f"about 10^{math.log10(count):.0f}"
