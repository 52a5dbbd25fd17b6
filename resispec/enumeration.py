"""Exact law of a verifier's output by enumerating every candidate tuple.

``law(y) = sum_{xbar} P(xbar) * law(y | xbar)``, where ``P(xbar)`` is the drafting probability of the
ordered tuple and ``law(. | xbar)`` the verifier's conditional law (its verification randomness
integrated out). The acceptance is ``sum_{xbar} P(xbar) * P(accept | xbar)``. The cost grows like
``support(q) ** k``, so enumerations past ``max_tuples`` are refused with a clear error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from resispec.verifiers.base import BoundVerifier

MAX_TUPLES = 200_000
"""Default ceiling on the number of candidate tuples one enumeration may visit."""


@dataclass(frozen=True)
class EnumeratedLaw:
    """The exact output law (shape (V,)), the exact acceptance, and how many tuples were visited."""

    law: np.ndarray
    acceptance: float
    tuples: int


def enumerate_law(bound: "BoundVerifier", max_tuples: int = MAX_TUPLES) -> EnumeratedLaw:
    """Enumerate every candidate tuple of ``bound`` (a verifier bound to p, q, k)."""
    verifier, q, k = bound.verifier, bound.q, bound.k
    count = verifier.scheme.tuple_count(q, k)
    if count > max_tuples:
        raise ValueError(
            f"exact enumeration of {verifier.name} would visit {count} candidate tuples "
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
