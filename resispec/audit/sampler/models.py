"""Small autoregressive target and draft models for chain and tree audits, and the node audit's contexts.

A model family maps a prefix (the token ids after the round's root) to a raw pair ``(p, q)`` over
``MODEL_VOCAB = 6`` tokens, seeded by ``(seed, prefix)`` so every run sees the same models:

- ``suite``: at each prefix one of the standard suite's V = 6 pairs (Dirichlet of three concentrations,
  p == q, one-hot p, disjoint supports, zeros in p, zeros in q), chosen by a hash of the prefix: corner
  cases along the chain, short rounds (disjoint) next to fully accepted ones (p == q); the root's pair is
  ``zeros-in-q``, where the known-biased controls of the zoo are most biased (``resispec audit``);
- ``dirichlet``: ``p ~ Dirichlet(1)``, ``q = 0.6 p + 0.4 Dirichlet(1)``: high acceptance, so rounds often
  reach the bonus row; the root's pair is ``CHAIN_TIES`` (exact ties in p, q and the residual, acceptance 0.8), so
  a sampler that collapses tied tokens at a verified row is seen along chains too (``tie_pairs``);
- ``ties`` (trees, by default): every node tied: the root ``FLOAT32_TIES`` (``CHAIN_TIES`` with two values moved by
  2e-9, which tie once rounded to float32), every deeper node ``CHAIN_TIES`` rolled by 0, 2 or 4 ids (chosen by a
  hash of the prefix), so a tree sampler that collapses tied tokens is seen below the root too, and at the root
  where it runs in float32;
- ``zeros`` (the edge probes): the suite's pairs with tokens of ``p = 0`` and ``q > 0`` (zeros in p,
  disjoint, one-hot p).

The audit tests against the *processed* models (``resispec.processing``); the sampler is handed the raw ones.
Every context carries a ``history`` (the ids generated before it, ``HISTORY`` folded into its vocabulary): the
penalties and ``min_tokens`` act on it (a chain's position i on the history, then the round's first i drafts).
Where the claims depend on the logits' sign (the repetition penalty), the logits handed over are ``log p +
LOGIT_SHIFT`` (tokens with p > e^-2 positive, the others negative) and the processed law is computed from them.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from resispec.audit.sampler.row_parameters import CLAIMED, combinations, row_claims
from resispec.processing import Processing, process_probs
from resispec.sequence.enumeration import RoundModels
from resispec.suite import SuitePair, get_suite

MODEL_VOCAB = 6
CHAIN_FAMILIES = ("suite", "dirichlet")
TREE_FAMILIES = (*CHAIN_FAMILIES, "ties")
ZERO_PAIRS = ("zeros-in-p", "disjoint", "one-hot-p")
SUITE_ROOT = "zeros-in-q"
HISTORY = (0, 1, 1, 3)
"""The tokens every context was generated after (ids taken modulo the vocabulary)."""
LOGIT_SHIFT = 2.0
"""``log p + LOGIT_SHIFT`` are the logits handed over when the claims depend on their sign (module doc)."""


def history_for(vocab: int) -> tuple[int, ...]:
    """``HISTORY`` in a vocabulary of ``vocab`` tokens."""
    return tuple(token % vocab for token in HISTORY)


def logit_shift(processing: Processing) -> float | None:
    """The fixed logit offset the claims need (``LOGIT_SHIFT`` for the repetition penalty), None otherwise."""
    return LOGIT_SHIFT if processing.needs_logits else None


def processed(row: np.ndarray, processing: Processing, history: tuple[int, ...]) -> np.ndarray:
    """The processed law of a raw probability row after ``history``, from the logits the sampler is handed."""
    return process_probs(row, processing, history, logit_shift(processing) or 0.0)


@dataclass(frozen=True)
class Context:
    """One node context: a raw suite pair and its processed law."""

    name: str
    raw_p: np.ndarray
    raw_q: np.ndarray
    p: np.ndarray
    q: np.ndarray
    processing: Processing
    history: tuple[int, ...]
    combination: str = CLAIMED.name
    """The per-row parameter combination it was audited under (``row_parameters``)."""


def variant_label(name: str, processing: Processing, mixed: bool) -> str:
    """A context's name: with mixed parameters, its claims in brackets."""
    return f"{name} [{processing.describe()}]" if mixed else name


def tie_pairs() -> list[SuitePair]:
    """Pairs with tied values, audited at every node by default: ``ties`` (exact ties in p, q and their residual
    ``(p - q)+``) and ``float32-ties`` (values 2e-9 apart that tie once rounded to float32). A sampler that ranks
    tokens by value and maps a rank back to the smallest id of that value emits one tied token, never the other
    (lightseekorg/tokenspeed PR #280's Triton top-k/top-p sampler; mistral.rs #2424's argmax of the filtered law)."""
    q = np.array([0.1, 0.1, 0.4, 0.4])
    near = np.array([0.3 + 2e-9, 0.3, 0.2, 0.2 - 2e-9])
    return [SuitePair("ties", np.array([0.3, 0.3, 0.2, 0.2]), q, "exact ties in p, q and the residual"),
            SuitePair("float32-ties", near / near.sum(), q, "values that tie once rounded to float32")]


TIE_PAIRS = ("ties", "float32-ties")
CHAIN_TIES = SuitePair("ties-6", np.array([0.25, 0.25, 0.2, 0.1, 0.1, 0.1]),
                       np.array([0.15, 0.15, 0.2, 0.2, 0.15, 0.15]),
                       "exact ties in p, q and the residual (0.1, 0.1 at ids 0, 1), TV(p, q) = 0.2")
"""The ``dirichlet`` chain family's root pair: a rejected root draws from a residual tied at ids 0 and 1, so a sampler
that collapses them onto id 0 moves the first token's law by TV 0.1 (module doc)."""
FLOAT32_TIES = SuitePair("float32-ties-6", CHAIN_TIES.p + np.array([2e-9, 0, 0, 0, 0, -2e-9]), CHAIN_TIES.q,
                         "CHAIN_TIES with p moved by 2e-9 at ids 0 and 5: tied once rounded to float32")
"""The ``ties`` family's root (module doc): distinct in float64, tied in float32 (2e-9 is under half a float32 ulp of
0.25 and 0.1)."""


def node_contexts(processing: Processing, names: Sequence[str] | None = None,
                  vary: tuple[str, ...] | None = None) -> list[Context]:
    """The standard suite's pairs and the tie pairs (or the named ones) as node contexts, per parameter
    combination of ``vary`` (``row_parameters``; None: the claims alone, unlabelled)."""
    pairs = [pair for pair in (*get_suite("standard"), *tie_pairs()) if names is None or pair.name in names]
    contexts = []
    for pair in pairs:
        for combination, claims, history in row_claims(processing, vary or (), history_for(pair.p.size), pair.p.size):
            p, q = (_context_law(row, claims, history, f"{pair.name} [{combination.name}]") for row in (pair.p, pair.q))
            contexts.append(Context(variant_label(pair.name, claims, vary is not None), pair.p, pair.q, p, q,
                                    claims, history, combination.name))
    order = [combination.name for combination in combinations(vary or ())]
    return sorted(contexts, key=lambda context: order.index(context.combination))  # combination by combination


def _context_law(row: np.ndarray, processing: Processing, history: tuple[int, ...], where: str) -> np.ndarray:
    """``processed``, its ``ValueError`` naming the context (a combination's rules emptying a row)."""
    try:
        return processed(row, processing, history)
    except ValueError as error:
        raise ValueError(f"{error} (context {where})") from None


class ChainModel:
    """A named family's raw and processed ``prefix -> (V,)`` target and draft (module doc), after ``history``;
    ``label`` names the context (default: the family)."""

    def __init__(self, family: str, processing: Processing, seed: int = 0, label: str | None = None,
                 history: tuple[int, ...] | None = None, combination: str = CLAIMED.name) -> None:
        if family not in (*TREE_FAMILIES, "zeros"):
            raise ValueError(f"family: expected one of {', '.join((*TREE_FAMILIES, 'zeros'))}, got {family!r}")
        self.family, self.processing, self.seed, self.label = family, processing, seed, label or family
        self.history = history_for(MODEL_VOCAB) if history is None else history
        self.combination = combination
        suite = [pair for pair in get_suite("standard") if pair.p.size == MODEL_VOCAB]
        self._pairs = [pair for pair in suite if family == "suite" or pair.name in ZERO_PAIRS]
        self.raw = lru_cache(maxsize=None)(self._raw)
        self.target = lru_cache(maxsize=None)(
            lambda prefix: self._law(self.raw(prefix)[0], prefix))
        self.draft = lru_cache(maxsize=None)(
            lambda prefix: self._law(self.raw(prefix)[1], prefix))

    @property
    def name(self) -> str:
        return self.label

    def with_processing(self, processing: Processing, history: tuple[int, ...] | None = None) -> ChainModel:
        """The same family, seed and raw rows under other claims (a parameter dropped: ``parameters``) and, given
        one, another history (a parameter read from another row: ``row_parameters``)."""
        other = ChainModel(self.family, processing, self.seed, self.label, history or self.history, self.combination)
        other.raw = self.raw
        return other

    def _law(self, row: np.ndarray, prefix: tuple[int, ...]) -> np.ndarray:
        return _context_law(row, self.processing, self.history + prefix, f"{self.label}, prefix {prefix}")

    def _raw(self, prefix: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        key = zlib.crc32(f"{self.family}|{self.seed}|{prefix}".encode())  # the family's, whatever the label
        if self.family == "dirichlet":
            if not prefix:
                return CHAIN_TIES.p, CHAIN_TIES.q
            rng = np.random.default_rng([self.seed, key])
            p = rng.dirichlet(np.ones(MODEL_VOCAB))
            return p, 0.6 * p + 0.4 * rng.dirichlet(np.ones(MODEL_VOCAB))
        if self.family == "ties":
            if not prefix:
                return FLOAT32_TIES.p, FLOAT32_TIES.q
            return np.roll(CHAIN_TIES.p, 2 * (key % 3)), np.roll(CHAIN_TIES.q, 2 * (key % 3))
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
