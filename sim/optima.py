"""The acceptance optima each verifier is measured against, per pair of a batch.

- i.i.d. optimum ``alpha* = 1 - max_i (Q_i^k - P_i)`` over ratio prefixes (``resispec.bounds``): no
  exact verifier of i.i.d. candidates accepts more (pooled reaches it).
- sequential optimum: the best sequential verifier of i.i.d. candidates, resispec's acceptance
  ``g(T_1)`` (the optimum of ``resispec.bounds.sequential_optimum_lp``; proven in theory/).
- top-k optimum: ``p(top-k of q)`` (``resispec.bounds``), reached by the topk verifier.
- alpha*-WOR ``= min_H [p(H) + 1 - P_k(H)]``, ``P_k(H)`` the probability that all k WOR draws fall in
  H: exact by the transport LP (``resispec.bounds.optimal_acceptance_lp``) when a pair has at most
  ``WorSettings.lp_limit`` WOR tuples; otherwise the minimum over prefixes of the tokens sorted by
  ``p/q`` (``resispec.bounds_wor.wor_prefix_bound``: deterministic, ``P_k`` by the race integral with
  an error estimate). Every H gives an upper bound on the acceptance of any exact WOR verifier, so the
  prefix value is an upper bound on alpha*-WOR, equal to it when a prefix minimises (observed on
  every small instance checked, not proven). These are the two routes of
  ``optimal_acceptance(p, q, k, "wor")``, with the simulator's own (smaller) LP limit.
- sequential WOR optimum: the best exact sequential verifier of k WOR candidates, by the LP over the
  draft tree (``resispec.bounds_wor.sequential_optimum_wor_lp``) when it has at most
  ``WorSettings.sequential_limit`` nodes (``sum_{j<=k} V!/(V-j)!``: small V only). At k = 2 it is the
  latest-first plan's acceptance at any V (``resispec.verifiers.resispec_wor.plan``; optimal among sequential
  verifiers of two WOR candidates, docs/resispec_wor.md section 3); at k = 1 it is always
  ``sum min(p, q)``. Elsewhere it is not computed (NaN).
WOR and top-k drafting cannot propose more distinct tokens than q's support: k is capped there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from resispec.bounds import optimal_acceptance, optimal_acceptance_lp
from resispec.bounds_wor import sequential_optimum_wor_lp, wor_prefix_bound
from resispec.drafting import DRAFTING_SCHEMES
from resispec.sim.batch import PairBatch
from resispec.validation import as_count
from resispec.verifiers.resispec_wor.plan import latest_first_plan

WOR_METHODS = {"lp": "transport LP (exact)", "prefix": "ratio-prefix bound (upper bound)"}
SEQUENTIAL_WOR_METHODS = {"lp": "sequential WOR LP", "closed": "latest-first plan (k <= 2)",
                          "none": "not computed (LP too large)"}


@dataclass(frozen=True)
class WorSettings:
    """alpha*-WOR by the transport LP up to ``lp_limit`` WOR tuples per pair (else the ratio-prefix
    bound); the sequential WOR LP up to ``sequential_limit`` draft-tree nodes per pair."""

    lp_limit: int = 2000
    sequential_limit: int = 5000

    def __post_init__(self) -> None:
        as_count(self.lp_limit, "lp_limit", "tuples")
        as_count(self.sequential_limit, "sequential_limit", "nodes")


@dataclass(frozen=True)
class Optima:
    """Per-pair optima at k (shape (N,) each). ``wor`` is alpha*-WOR (or its ratio-prefix bound) and
    ``wor_error`` the race integral's error estimate (0 where the LP was solved); ``wor_route`` and
    ``sequential_wor_route`` (per pair) name how each value was obtained (keys of ``WOR_METHODS`` and
    ``SEQUENTIAL_WOR_METHODS``); ``sequential_wor`` is NaN where it was not computed."""

    k: int
    iid: np.ndarray
    sequential: np.ndarray
    topk: np.ndarray
    wor: np.ndarray
    wor_error: np.ndarray
    wor_route: np.ndarray
    sequential_wor: np.ndarray
    sequential_wor_route: np.ndarray

    def for_drafting(self, drafting: str) -> np.ndarray:
        """The optimum of the verifiers that draft this way (any verifier, joint or sequential)."""
        return {"iid": self.iid, "wor": self.wor, "topk": self.topk}[drafting]

    def sequential_for(self, drafting: str) -> np.ndarray:
        """The best sequential verifier's acceptance for this drafting scheme."""
        return {"iid": self.sequential, "wor": self.sequential_wor, "topk": self.topk}[drafting]

    @property
    def wor_method(self) -> str:
        return _method(self.wor_route, WOR_METHODS)

    @property
    def sequential_wor_method(self) -> str:
        return _method(self.sequential_wor_route, SEQUENTIAL_WOR_METHODS)


def _method(routes: np.ndarray, names: dict[str, str]) -> str:
    """One route's name, or the count of pairs per route when they differ."""
    kinds, counts = np.unique(routes, return_counts=True)
    if kinds.size == 1:
        return names[str(kinds[0])]
    return "; ".join(f"{names[str(kind)]} on {count} pairs" for kind, count in zip(kinds, counts))


def support_capped(q: np.ndarray, k: int) -> int:
    """k, capped at the number of tokens with ``q > 0``."""
    return min(k, int(np.count_nonzero(q)))


def alpha_star_wor(p: np.ndarray, q: np.ndarray, k: int, settings: WorSettings) -> tuple[float, float, str]:
    """``(value, error estimate, route)`` of alpha*-WOR for one pair (module docstring); k capped."""
    count = support_capped(q, k)
    if DRAFTING_SCHEMES["wor"].tuple_count(q, count) <= settings.lp_limit:
        return optimal_acceptance_lp(p, q, count, "wor"), 0.0, "lp"
    bound = wor_prefix_bound(p, q, count)
    return bound.value, bound.error, "prefix"


def sequential_wor_optimum(p: np.ndarray, q: np.ndarray, k: int, settings: WorSettings) -> tuple[float, str]:
    """``(value, route)`` of the sequential WOR optimum for one pair (module docstring); k capped."""
    count = support_capped(q, k)
    if count == 1:
        return float(np.minimum(p, q).sum()), "closed"
    support = int(np.count_nonzero(q))
    if sum(math.perm(support, depth) for depth in range(1, count + 1)) <= settings.sequential_limit:
        return sequential_optimum_wor_lp(p, q, count), "lp"
    if count == 2:
        return float(latest_first_plan(p[None], q[None]).acceptance[0]), "closed"
    return float("nan"), "none"


def optima(batch: PairBatch, ks: list[int], sequential: dict[int, np.ndarray],
           settings: WorSettings = WorSettings()) -> dict[int, Optima]:
    """Every optimum at every k; ``sequential[k]`` is resispec's per-pair acceptance."""
    result = {}
    for k in ks:
        pairs = list(zip(batch.p, batch.q))
        iid = np.array([optimal_acceptance(p, q, k) for p, q in pairs])
        topk = np.array([optimal_acceptance(p, q, support_capped(q, k), "topk") for p, q in pairs])
        wor = [alpha_star_wor(p, q, k, settings) for p, q in pairs]
        sequential_wor = [sequential_wor_optimum(p, q, k, settings) for p, q in pairs]
        result[k] = Optima(k, iid, sequential[k], topk, np.array([value for value, _, _ in wor]),
                           np.array([error for _, error, _ in wor]), np.array([route for _, _, route in wor]),
                           np.array([value for value, _ in sequential_wor]),
                           np.array([route for _, route in sequential_wor]))
    return result
