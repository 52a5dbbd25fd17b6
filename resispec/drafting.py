"""The three drafting schemes: how the k candidates are drawn from the draft ``q``.

- ``iid`` (with replacement): ``x_i ~ q`` independently; tuple probability ``prod_i q(x_i)``.
- ``wor`` (without replacement, successive sampling = Gumbel-top-k): ``q_1 = q``,
  ``q_{i+1} = norm(q_i with x_i set to 0)``; tuple probability ``prod_i q_i(x_i)``. The remaining
  mass is always the sum of the undrawn ``q``'s, never ``1 - sum(drawn)`` (which cancels
  catastrophically when one token holds almost all the mass).
- ``topk`` (deterministic): the k most probable draft tokens, ties by token id; probability 1.

Each scheme draws, scores and enumerates tuples, and rejects tuples it could not have produced.
"""

from __future__ import annotations

import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator

import numpy as np

from resispec.sampling import inverse_cdf


class DraftingScheme(ABC):
    """How candidate tuples are drawn from ``q`` (shape (V,), already validated)."""

    name: str

    def max_candidates(self, q: np.ndarray) -> int | None:
        """Largest k the scheme can draw from ``q`` (None: unbounded)."""
        return int(np.count_nonzero(q))

    def check_count(self, q: np.ndarray, k: int) -> None:
        """Raise ``ValueError`` if the scheme cannot draw ``k`` candidates from ``q``."""
        limit = self.max_candidates(q)
        if limit is not None and k > limit:
            raise ValueError(
                f"k: {self.name} drafting needs k <= the draft's support, but k = {k} and only "
                f"{limit} tokens have q > 0"
            )

    @abstractmethod
    def draft(self, q: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        """Draw k candidate ids (int64 array, in draw order)."""

    def draft_rows(self, q: np.ndarray, k: int, n: int, uniforms: int,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """n samples ``(candidates (n, k), u (n, uniforms))``, each k candidates then its verification
        uniforms, drawn from ``rng`` in that order (the stream of n ``draft`` + ``rng.random(uniforms)``)."""
        draw = self._drafter(q, k)
        candidates, u = np.empty((n, k), dtype=np.int64), np.empty((n, uniforms))
        for row in range(n):
            candidates[row] = draw(rng)
            u[row] = rng.random(uniforms)
        return candidates, u

    def _drafter(self, q: np.ndarray, k: int) -> Callable[[np.random.Generator], np.ndarray]:
        """One ``draft(q, k, rng)`` as a function of ``rng``, with any work on ``q`` done once (``draft_rows``)."""
        return lambda rng: self.draft(q, k, rng)

    @abstractmethod
    def probability(self, q: np.ndarray, candidates: np.ndarray) -> float:
        """Probability of the ordered tuple ``candidates`` under this scheme."""

    @abstractmethod
    def tuples(self, q: np.ndarray, k: int) -> Iterator[tuple[tuple[int, ...], float]]:
        """Every ordered tuple of positive probability, with its probability."""

    @abstractmethod
    def tuple_count(self, q: np.ndarray, k: int) -> int:
        """How many tuples ``tuples`` yields (to refuse enumerations that are too large)."""

    def impossible_rows(self, q: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """bool (n,): which rows of ``candidates`` (n, k), ids in range, this scheme could not have
        produced (``check_candidates`` says why)."""
        return (q[candidates] <= 0).any(axis=1)

    def check_candidates(self, q: np.ndarray, candidates: np.ndarray) -> None:
        """Raise ``ValueError`` if this scheme could not have produced ``candidates``."""
        self.check_count(q, candidates.size)
        impossible = q[candidates] <= 0
        if impossible.any():
            position = int(np.flatnonzero(impossible)[0])
            raise ValueError(
                f"candidates: token {candidates[position]} at position {position} has draft "
                f"probability q = 0, so the {self.name} draft could not have produced it"
            )


class IIDDrafting(DraftingScheme):
    """Independent draws with replacement: ``x_i ~ q``, ``P(x) = prod_i q(x_i)``."""

    name = "iid"

    def max_candidates(self, q: np.ndarray) -> int | None:
        return None

    def draft(self, q: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        return inverse_cdf(q, rng.random(k))

    def draft_rows(self, q: np.ndarray, k: int, n: int, uniforms: int,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """One ``rng.random((n, k + uniforms))``: the same stream, row by row, as n drafts and their uniforms."""
        draws = rng.random((n, k + uniforms))
        return inverse_cdf(q, draws[:, :k]), draws[:, k:]

    def probability(self, q: np.ndarray, candidates: np.ndarray) -> float:
        return float(np.prod(q[candidates]))

    def tuples(self, q: np.ndarray, k: int) -> Iterator[tuple[tuple[int, ...], float]]:
        support = np.flatnonzero(q > 0).tolist()
        for candidates in itertools.product(support, repeat=k):
            yield candidates, math.prod(q[x] for x in candidates)

    def tuple_count(self, q: np.ndarray, k: int) -> int:
        return int(np.count_nonzero(q)) ** k


def undrawn_mass(q: np.ndarray, drawn: np.ndarray) -> float:
    """``sum of q over tokens not in drawn``, summed directly (no ``1 - sum(drawn)`` cancellation)."""
    keep = np.ones(q.size, dtype=bool)
    keep[drawn] = False
    return float(q[keep].sum())


def wor_probabilities(q: np.ndarray, drawn: np.ndarray) -> np.ndarray:
    """``P(x) = prod_i q(x_i) / m_i(x)`` of each row of ``drawn`` (int (T, k), distinct tokens per row), the
    undrawn mass ``m_i(x) = sum of q over tokens not in x_<i`` summed directly over q's support (no
    ``1 - sum`` cancellation); a step with nothing left has probability 0. Shape (T,)."""
    support = np.flatnonzero(q > 0)
    position = np.full(q.size, -1)
    position[support] = np.arange(support.size)
    undrawn = np.broadcast_to(q[support], (drawn.shape[0], support.size)).copy()
    probability, rows = np.ones(drawn.shape[0]), np.arange(drawn.shape[0])
    for step in drawn.T:
        remaining = undrawn.sum(axis=1)
        probability *= np.divide(q[step], remaining, out=np.zeros_like(remaining), where=remaining > 0)
        undrawn[rows, position[step]] = 0.0  # a token outside the support has q = 0: its product is 0 already
    return probability


def masked_draft(q: np.ndarray, drawn: np.ndarray) -> np.ndarray:
    """The WOR proposal after ``drawn``: ``norm(q with drawn set to 0)`` (shape (V,))."""
    masked = q.copy()
    masked[drawn] = 0.0
    return masked / masked.sum()


class WORDrafting(DraftingScheme):
    """Successive sampling without replacement (Gumbel-top-k): ``P(x) = prod_i q_i(x_i)``."""

    name = "wor"

    def draft(self, q: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        self.check_count(q, k)
        return _largest_keys(_log(q) + rng.gumbel(size=q.size), k)

    def _drafter(self, q: np.ndarray, k: int) -> Callable[[np.random.Generator], np.ndarray]:
        """``draft`` with the count checked and ``log q`` taken once."""
        self.check_count(q, k)
        log_q = _log(q)
        return lambda rng: _largest_keys(log_q + rng.gumbel(size=q.size), k)

    def probability(self, q: np.ndarray, candidates: np.ndarray) -> float:
        if np.unique(candidates).size != candidates.size:
            return 0.0
        return float(wor_probabilities(q, np.asarray(candidates, dtype=np.int64)[None])[0])

    def tuples(self, q: np.ndarray, k: int) -> Iterator[tuple[tuple[int, ...], float]]:
        support = np.flatnonzero(q > 0)
        drawn = support[np.array(list(itertools.permutations(range(support.size), k)), dtype=np.int64)
                        .reshape(-1, k)]
        yield from zip(map(tuple, drawn.tolist()), wor_probabilities(q, drawn).tolist())

    def tuple_count(self, q: np.ndarray, k: int) -> int:
        return math.perm(int(np.count_nonzero(q)), k)

    def impossible_rows(self, q: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        ordered = np.sort(candidates, axis=1)
        return super().impossible_rows(q, candidates) | (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)

    def check_candidates(self, q: np.ndarray, candidates: np.ndarray) -> None:
        super().check_candidates(q, candidates)
        values, counts = np.unique(candidates, return_counts=True)
        if (counts > 1).any():
            raise ValueError(
                f"candidates: token {values[counts > 1][0]} appears more than once, which drafting "
                f"without replacement cannot produce"
            )


def _log(q: np.ndarray) -> np.ndarray:
    """``log q``, -inf where q = 0 (a Gumbel key that never wins)."""
    with np.errstate(divide="ignore"):
        return np.log(q)


def _largest_keys(keys: np.ndarray, k: int) -> np.ndarray:
    """The ids of the k largest Gumbel keys, largest first (the successive-sampling draw order)."""
    top = np.argpartition(-keys, k - 1)[:k]
    return top[np.argsort(-keys[top], kind="stable")].astype(np.int64)


def top_k_tokens(q: np.ndarray, k: int) -> np.ndarray:
    """The k tokens of largest ``q``, in descending ``q``, ties broken by ascending token id."""
    kth_largest = np.partition(q, q.size - k)[q.size - k]
    contenders = np.flatnonzero(q >= kth_largest)
    order = np.lexsort((contenders, -q[contenders]))
    return contenders[order[:k]].astype(np.int64)


class TopKDrafting(DraftingScheme):
    """Deterministic top-k: the k largest ``q`` (ties by token id); that tuple has probability 1."""

    name = "topk"

    def draft(self, q: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        self.check_count(q, k)
        return top_k_tokens(q, k)

    def draft_rows(self, q: np.ndarray, k: int, n: int, uniforms: int,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The one tuple n times; drafting draws nothing, so the uniforms are one ``rng.random((n, uniforms))``."""
        return np.tile(self.draft(q, k, rng), (n, 1)), rng.random((n, uniforms))

    def probability(self, q: np.ndarray, candidates: np.ndarray) -> float:
        if candidates.size > self.max_candidates(q):
            return 0.0
        return float(np.array_equal(candidates, top_k_tokens(q, candidates.size)))

    def tuples(self, q: np.ndarray, k: int) -> Iterator[tuple[tuple[int, ...], float]]:
        yield tuple(top_k_tokens(q, k).tolist()), 1.0

    def tuple_count(self, q: np.ndarray, k: int) -> int:
        return 1

    def impossible_rows(self, q: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        if candidates.shape[1] > self.max_candidates(q):
            return np.ones(candidates.shape[0], dtype=bool)
        return (candidates != top_k_tokens(q, candidates.shape[1])).any(axis=1)

    def check_candidates(self, q: np.ndarray, candidates: np.ndarray) -> None:
        super().check_candidates(q, candidates)
        expected = top_k_tokens(q, candidates.size)
        if not np.array_equal(candidates, expected):
            raise ValueError(
                f"candidates: {candidates.tolist()} are not the draft's top-{candidates.size} tokens "
                f"{expected.tolist()} (descending q, ties by token id), the only tuple top-k drafting produces"
            )


DRAFTING_SCHEMES: dict[str, DraftingScheme] = {
    scheme.name: scheme for scheme in (IIDDrafting(), WORDrafting(), TopKDrafting())
}
