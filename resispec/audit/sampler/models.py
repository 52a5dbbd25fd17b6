"""Small autoregressive target and draft models for chain and tree audits, and the node audit's contexts.

A model family maps a prefix (the token ids after the round's root) to a raw pair ``(p, q)`` over
``MODEL_VOCAB = 6`` tokens, seeded by ``(seed, prefix)`` so every run sees the same models:

- ``suite``: at each prefix one of the standard suite's V = 6 pairs (Dirichlet of three concentrations,
  p == q, one-hot p, disjoint supports, zeros in p, zeros in q), chosen by a hash of the prefix: corner
  cases along the chain, short rounds (disjoint) next to fully accepted ones (p == q); the root's pair is
  ``zeros-in-q``, where the known-biased controls of the zoo are most biased (``resispec audit``);
- ``dirichlet``: ``p ~ Dirichlet(1)``, ``q = 0.6 p + 0.4 Dirichlet(1)``: high acceptance, so rounds often
  reach the bonus row;
- ``zeros`` (the edge probes): the suite's pairs with tokens of ``p = 0`` and ``q > 0`` (zeros in p,
  disjoint, one-hot p).

The audit tests against the *processed* models (``resispec.processing``); the sampler is handed the raw ones.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from resispec.processing import Processing, process_probs
from resispec.sequence.enumeration import RoundModels
from resispec.suite import SuitePair, get_suite

MODEL_VOCAB = 6
CHAIN_FAMILIES = ("suite", "dirichlet")
ZERO_PAIRS = ("zeros-in-p", "disjoint", "one-hot-p")
SUITE_ROOT = "zeros-in-q"


def processed_pair(pair: SuitePair, processing: Processing) -> tuple[np.ndarray, np.ndarray]:
    """``(process(p), process(q))`` of a raw pair, float64 rows (V,)."""
    return process_probs(pair.p, processing), process_probs(pair.q, processing)


@dataclass(frozen=True)
class Context:
    """One node context: a raw suite pair and its processed law."""

    name: str
    raw_p: np.ndarray
    raw_q: np.ndarray
    p: np.ndarray
    q: np.ndarray


def node_contexts(processing: Processing, names: Sequence[str] | None = None) -> list[Context]:
    """The standard suite's pairs (or the named ones) as node contexts."""
    pairs = [pair for pair in get_suite("standard") if names is None or pair.name in names]
    return [Context(pair.name, pair.p, pair.q, *processed_pair(pair, processing)) for pair in pairs]


class ChainModel:
    """A named family's raw and processed ``prefix -> (V,)`` target and draft (module doc)."""

    def __init__(self, family: str, processing: Processing, seed: int = 0) -> None:
        if family not in (*CHAIN_FAMILIES, "zeros"):
            raise ValueError(f"family: expected one of {', '.join((*CHAIN_FAMILIES, 'zeros'))}, got {family!r}")
        self.family, self.processing, self.seed = family, processing, seed
        suite = [pair for pair in get_suite("standard") if pair.p.size == MODEL_VOCAB]
        self._pairs = [pair for pair in suite if family == "suite" or pair.name in ZERO_PAIRS]
        self.raw = lru_cache(maxsize=None)(self._raw)
        self.target = lru_cache(maxsize=None)(lambda prefix: process_probs(self.raw(prefix)[0], processing))
        self.draft = lru_cache(maxsize=None)(lambda prefix: process_probs(self.raw(prefix)[1], processing))

    @property
    def name(self) -> str:
        return self.family

    def _raw(self, prefix: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        key = zlib.crc32(f"{self.family}|{self.seed}|{prefix}".encode())
        if self.family == "dirichlet":
            rng = np.random.default_rng([self.seed, key])
            p = rng.dirichlet(np.ones(MODEL_VOCAB))
            return p, 0.6 * p + 0.4 * rng.dirichlet(np.ones(MODEL_VOCAB))
        names = [pair.name for pair in self._pairs]
        pair = self._pairs[names.index(SUITE_ROOT)] if not prefix and SUITE_ROOT in names else \
            self._pairs[key % len(self._pairs)]
        return pair.p, pair.q

    def round_models(self, branching: Sequence[int]) -> RoundModels:
        """The processed models as ``RoundModels`` (exact sequence law and round enumeration)."""
        return RoundModels(self.target, self.draft, MODEL_VOCAB, branching)


def uniform_row(count: int = MODEL_VOCAB) -> np.ndarray:
    """The padding row handed past a row's chain length."""
    return np.full(count, 1.0 / count)
