"""Exact law of a verifier's output by enumerating every candidate tuple.

``law(y) = sum_{xbar} P(xbar) * law(y | xbar)``, where ``P(xbar)`` is the drafting probability of the
ordered tuple and ``law(. | xbar)`` the verifier's conditional law (its verification randomness
integrated out). The acceptance is ``sum_{xbar} P(xbar) * P(accept | xbar)``. The cost grows like
``support(q) ** k``, so enumerations past ``max_tuples`` are refused with a clear error.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from resispec.limits import MAX_TUPLES
from resispec.validation import as_count

if TYPE_CHECKING:
    from resispec.verifiers.base import BoundVerifier



TUPLES_PER_CHUNK = 4096
"""Tuples whose conditional laws one batched call computes (``Verifier._laws_many``)."""


@dataclass(frozen=True)
class EnumeratedLaw:
    """The exact output law (shape (V,)), the exact acceptance, and how many tuples were visited."""

    law: np.ndarray
    acceptance: float
    tuples: int


def enumerate_law(bound: BoundVerifier, max_tuples: int = MAX_TUPLES) -> EnumeratedLaw:
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
    tuples = verifier.scheme.tuples(q, k)
    while chunk := list(itertools.islice(tuples, TUPLES_PER_CHUNK)):
        candidates = np.array([candidates for candidates, _ in chunk], dtype=np.int64).reshape(-1, k)
        probabilities = np.array([probability for _, probability in chunk])
        conditional, accepted = verifier._laws_many(bound, candidates)
        law += probabilities @ conditional
        acceptance += float(probabilities @ accepted)
    return EnumeratedLaw(law=law, acceptance=acceptance, tuples=count)


@dataclass(frozen=True)
class StepLaws:
    """A sequential verifier's exact output law split by the step that emits the token.

    ``accepted[i, y] = P(candidates 1..i rejected, candidate i + 1 accepted and equal to y)``
    (shape (k, V)); ``reached[i] = P(candidates 1..i rejected)`` for i = 0..k (shape (k + 1,); 1 at
    i = 0 up to rounding);
    ``final[y] = P(every candidate rejected, the final residual emits y)``. The law is
    ``accepted.sum(0) + final``.
    """

    accepted: np.ndarray
    reached: np.ndarray
    final: np.ndarray

    @property
    def law(self) -> np.ndarray:
        return self.accepted.sum(axis=0) + self.final

    def residual(self, step: int) -> np.ndarray:
        """The law of the output given that candidates 1..step-1 were rejected (step = 1..k + 1):
        ``(sum_{j >= step} accepted_j + final) / reached[step - 1]``, averaged over the drafts. For an
        exact verifier whose residual does not depend on the candidates (rrs, resispec) it is the
        residual target ``r_step``; zeros where the step is never reached."""
        if not 1 <= step <= self.reached.size:
            raise ValueError(f"step: expected 1..{self.reached.size}, got {step}")
        mass = self.accepted[step - 1:].sum(axis=0) + self.final
        reach = self.reached[step - 1]
        return mass / reach if reach > 0 else np.zeros_like(mass)


def enumerate_steps(bound: BoundVerifier, max_tuples: int = MAX_TUPLES) -> StepLaws:
    """``StepLaws`` of a sequential verifier bound to (p, q, k), by enumerating every candidate tuple:
    ``accepted[i] = sum_xbar P(xbar) reach_i(xbar) a_i(xbar) delta(x_i)`` (``BoundVerifier.step_masses``)."""
    verifier, q, k = bound.verifier, bound.q, bound.k
    count = verifier.scheme.tuple_count(q, k)
    if count > max_tuples:
        raise ValueError(f"step laws of {verifier.name} would visit {count} candidate tuples, more than "
                         f"max_tuples = {max_tuples}; use a smaller vocabulary or k")
    accepted, final = np.zeros((k, bound.p.size)), np.zeros(bound.p.size)
    for candidates, probability in verifier.scheme.tuples(q, k):
        steps, residual, _ = bound.step_masses(candidates)
        accepted[np.arange(steps.size), list(candidates)] += probability * steps
        final += probability * residual
    emitted = np.append(accepted.sum(axis=1), final.sum())
    reached = np.cumsum(emitted[::-1])[::-1]  # P(reach step i) = mass emitted at step i or later, summed directly
    return StepLaws(accepted, reached, final)


def magnitude(count: int) -> str:
    """``count`` in decimal, or ``about 10^d`` past 30 digits (Python refuses to print an int of 4300+
    digits, and such a count says nothing more)."""
    if count < 10**30:
        return str(count)
    return f"about 10^{math.log10(count):.0f}"
