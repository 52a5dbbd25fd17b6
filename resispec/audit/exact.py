"""Exact-law audit: enumerate candidate tuples, integrate out the verification randomness.

``law = sum_{xbar} P(xbar) law(. | xbar)`` is compared with p: ``max_error = max_y |law(y) - p(y)|``
and ``tv = 1/2 sum_y |law(y) - p(y)|``. An exact verifier gives ~1e-16; a biased one its true bias.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from resispec.enumeration import MAX_TUPLES, enumerate_law
from resispec.verifiers import BoundVerifier, Verifier, get_verifier

EXACT_TOLERANCE = 1e-12
"""Largest ``max_error`` an exact verifier may show (float64 rounding is ~1e-16)."""


@dataclass(frozen=True)
class ExactLaw:
    """The enumerated output law (shape (V,)), its distance from p, the acceptance, tuples visited."""

    law: np.ndarray
    max_error: float
    tv: float
    acceptance: float
    tuples: int

    @property
    def exact(self) -> bool:
        return self.max_error <= EXACT_TOLERANCE


def resolve(verifier: Verifier | str) -> Verifier:
    """A verifier instance from an instance or a name."""
    return get_verifier(verifier) if isinstance(verifier, str) else verifier


def exact_law(verifier: Verifier | str, p: np.ndarray, q: np.ndarray, k: int,
              max_tuples: int = MAX_TUPLES) -> ExactLaw:
    """Exact law of ``verifier``'s output on ``(p, q, k)`` by enumeration (refused past ``max_tuples``)."""
    return bound_exact_law(resolve(verifier).bind(p, q, k), max_tuples)


def bound_exact_law(bound: BoundVerifier, max_tuples: int = MAX_TUPLES) -> ExactLaw:
    """``exact_law`` of a verifier already bound to ``(p, q, k)`` (its plan computed once, shared)."""
    enumerated = enumerate_law(bound, max_tuples)
    error = np.abs(enumerated.law - bound.p)
    return ExactLaw(
        law=enumerated.law,
        max_error=float(error.max()),
        tv=0.5 * float(error.sum()),
        acceptance=enumerated.acceptance,
        tuples=enumerated.tuples,
    )
