"""Built-in suites of (p, q) pairs for the audits: generic pairs and deliberate corner cases.

Every pair is fixed (seeded), so audit results are reproducible. ``standard`` covers random
Dirichlet pairs of several concentrations, p == q, one-hot p, disjoint supports, zeros in p and in
q, masses near 1e-12, an LLM-like peaky pair, and the three-token counterexample to the published
ResiSpec rule; ``quick`` is a smaller subset for smoke runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SUITE_SEED = 20261130


@dataclass(frozen=True)
class SuitePair:
    """A named pair: target ``p`` and draft ``q`` (shape (V,)) with what it exercises."""

    name: str
    p: np.ndarray
    q: np.ndarray
    about: str


def _normalised(values: np.ndarray) -> np.ndarray:
    return values / values.sum()


def _standard() -> list[SuitePair]:
    from scipy.special import softmax  # deferred: see the resispec package doc

    rng = np.random.default_rng(SUITE_SEED)
    pairs = [
        SuitePair(f"dirichlet-{alpha:g}", rng.dirichlet(np.full(6, alpha)), rng.dirichlet(np.full(6, alpha)),
                  f"random Dirichlet({alpha:g}) pair, V = 6")
        for alpha in (0.3, 1.0, 3.0)
    ]
    shared = rng.dirichlet(np.ones(6))
    pairs.append(SuitePair("p-equals-q", shared, shared.copy(), "p == q: everything is accepted"))
    pairs.append(SuitePair("one-hot-p", np.eye(6)[2], rng.dirichlet(np.ones(6)), "one-hot target"))
    pairs.append(SuitePair("disjoint", _normalised(np.array([3.0, 2.0, 1.0, 0, 0, 0])),
                           _normalised(np.array([0, 0, 0, 1.0, 2.0, 3.0])),
                           "disjoint supports: every candidate is rejected"))
    pairs.append(SuitePair("zeros-in-p", _normalised(np.array([0.5, 0, 0.3, 0, 0.2, 0.1])),
                           rng.dirichlet(np.ones(6)), "p = 0 on tokens the draft proposes"))
    pairs.append(SuitePair("zeros-in-q", rng.dirichlet(np.ones(6)),
                           _normalised(np.array([0.6, 0.25, 0, 0.15, 0, 0])), "q = 0 where p > 0"))
    tiny = 1e-12
    pairs.append(SuitePair("tiny-masses", _normalised(np.array([0.5, 0.3, 0.2 - 2 * tiny, tiny, tiny])),
                           _normalised(np.array([0.2 - 3 * tiny, 0.3, 0.5, tiny, 2 * tiny])),
                           "masses near 1e-12 in p and q"))
    logits = rng.standard_normal(8) * 2.5
    pairs.append(SuitePair("llm-like", softmax(logits), softmax(logits + rng.standard_normal(8)),
                           "peaky LLM-like pair: q = softmax(logits + noise), V = 8"))
    pairs.append(SuitePair("counterexample", np.array([0.4, 0.3, 0.3]), np.array([0.6, 0.3, 0.1]),
                           "three-token counterexample to the published ResiSpec rule"))
    return pairs


def get_suite(name: str = "standard") -> list[SuitePair]:
    """The named suite: ``standard`` or ``quick``."""
    pairs = _standard()
    if name == "standard":
        return pairs
    if name == "quick":
        keep = {"dirichlet-1", "p-equals-q", "zeros-in-q", "llm-like", "counterexample"}
        return [pair for pair in pairs if pair.name in keep]
    raise ValueError(f"suite: unknown suite {name!r}; known: standard, quick")


SUITE_NAMES = ("standard", "quick")
