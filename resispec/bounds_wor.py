"""Acceptance bounds for candidates drawn without replacement (WOR).

- **Sequential WOR optimum** (small V, ``sequential_optimum_wor_lp``). A sequential verifier examines
  the WOR candidates in draw order; its decision on candidate j may depend on the whole ordered history
  ``h = (x_1..x_{j-1})`` of rejected candidates (and private randomness), not on later candidates; after
  k rejections it emits from a residual that may depend on h. Variables: the accepted mass ``m(h, x)``
  of each node (history h, candidate x not in h) of the draft tree. With ``P(h)`` the drafting
  probability of the ordered prefix h, the probability of reaching node (h, x) is
  ``P(h x) - sum_{j < |h|} m(h_<j, h_j) P(h x | h_<=j)`` (the draws after an acceptance would have
  happened with the same probabilities), so the constraints are, for every node and every token y,

      m(h, x) + sum_{j < |h|} m(h_<j, h_j) P(h x) / P(h_<=j) <= P(h x),   sum_{h : y not in h} m(h, y) <= p(y),

  ``m >= 0``; maximise ``sum m``. Feasible m and exact verifiers correspond (the residual emits the
  target mass left, ``p - sum_h m(h, .)``, whose total is the all-rejected probability), so the optimum
  is the best acceptance of any exact sequential verifier. For k = 2 it equals the latest-first plan
  (``resispec.verifiers.resispec_wor.plan``).
- **alpha*-WOR over ratio prefixes** (any V, ``wor_prefix_bound``). Every exact verifier accepts at
  most ``p(H) + 1 - P_k(H)`` for every token set H, ``P_k(H)`` = probability that all k WOR draws fall
  in H (the min cut of the transport LP; ``bounds.optimal_acceptance_lp`` minimises over all H). Unlike
  the i.i.d. case, ``P_k(H)`` is not a function of ``q(H)`` alone (for fixed ``q(H)``, one heavy token
  and many light ones differ), so ratio prefixes need not contain the minimiser: the minimum over
  prefixes is an upper bound on alpha*-WOR (equal when a prefix is a minimiser) and hence on the
  acceptance of every exact WOR verifier.
- **P_k(H) by an exponential race** (``wor_all_in_probability``, ``resispec.race``): WOR draws are the
  arrival order of independent clocks ``E_x ~ Exp(q_x)`` (Gumbel-top-k). All k first arrivals lie in H
  iff the k-th arrival in H precedes the first arrival outside H, which is ``Exp(1 - q(H))``,
  independent; integrating over the time t of the k-th arrival in H (density ``g_H``),

      P_k(H) = int_0^inf e^{-(1 - m) t} g_H(t) dt,   m = q(H),
      g_H(t) = sum_{z in H} q_z e^{-q_z t} P(exactly k - 1 of the other clocks in H rang by t),

  ``g_H = [X^(k-1)] B_H``, B the flux polynomial of H's race pair (``resispec.race``; positive coefficients,
  nothing cancels). The integral is taken in ``u = ln t``, where the integrand is analytic in the strip
  ``|Im u| < pi/2``, so the trapezoid rule with step h converges geometrically (error ~ ``exp(-pi^2 / h)``,
  Trefethen & Weideman 2014); left of t = 1 the substitution ``u = s - exp(-s)`` (step h in s) makes the
  slowly decaying left tail (``t^k``) decay double-exponentially. The grid (``resispec.race.race_grid``) is
  one per draft and k, shared by every H: the integrand decays at rate ``(1 - m) + (m - top_{k-1}(H)) >=
  m_k``, the mass outside the k - 1 heaviest tokens, so the right tail is bounded by a Gamma(k, m_k) tail,
  the left by ``t_lo^k / k!``. Error estimate: the same sum on every other node (step 2h) differs from the
  step-h sum by about the step-2h error ``C exp(-pi^2 / 2h)``; at that geometric rate the step-h error is
  ``C exp(-pi^2 / h)``, so the reported ``error`` is the difference times ``exp(-pi^2 / 2h)``, plus both
  tail bounds. Prefixes share one compiled pass over tokens in ratio order (O(V k N) for N nodes, N ~ 30-40
  on LLM rows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from resispec.drafting import DRAFTING_SCHEMES, undrawn_mass
from resispec.limits import SEQUENTIAL_LP_MAX_NODES
from resispec.ratio_profile import RatioProfile
from resispec.validation import as_count, as_distribution, as_pair, as_token_set

if TYPE_CHECKING:
    from resispec.race import Race


def _draft_tree(q: np.ndarray, k: int) -> tuple[list[tuple[int, ...]], list[float]]:
    """Every ordered WOR prefix ``h x`` of length 1..k over the draft's support, parents first, with
    its last draw's conditional probability ``q_{-h}(x) = q_x / (undrawn mass after h)``."""
    support = np.flatnonzero(q > 0).tolist()
    nodes, steps = [], []
    frontier: list[tuple[int, ...]] = [()]
    for _ in range(k):
        grown = []
        for history in frontier:
            remaining = undrawn_mass(q, np.array(history, dtype=np.int64))
            for x in support:
                if x not in history:
                    grown.append(history + (x,))
                    steps.append(q[x] / remaining)
        nodes.extend(grown)
        frontier = grown
    return nodes, steps


def sequential_optimum_wor_lp(p: np.ndarray, q: np.ndarray, k: int) -> float:
    """Best acceptance of any exact sequential verifier of k WOR candidates (LP; see the module docstring).

    A node ``h x`` (the ordered tuple: rejected history h, then candidate x) is one LP variable. The
    coefficient ``P(h x) / P(h_<=j)`` is the product of the conditional draws after depth j (no
    division, so tiny tuple probabilities cannot turn it into 0/0).
    """
    p_array, q_array = as_pair(p, q)
    k = as_count(k)
    DRAFTING_SCHEMES["wor"].check_count(q_array, k)
    size = sum(math.perm(int(np.count_nonzero(q_array)), j) for j in range(1, k + 1))
    if size > SEQUENTIAL_LP_MAX_NODES:
        raise ValueError(
            f"the sequential WOR LP would have {size} nodes, more than {SEQUENTIAL_LP_MAX_NODES}; "
            "use a smaller vocabulary or k"
        )
    nodes, steps = _draft_tree(q_array, k)
    index = {node: i for i, node in enumerate(nodes)}
    rows, cols, values, probabilities = [], [], [], []
    for row, node in enumerate(nodes):
        after = 1.0  # P(draws after depth j | first j draws)
        for depth in range(len(node), 0, -1):
            ancestor = index[node[:depth]]
            rows.append(row)
            cols.append(ancestor)
            values.append(after)
            after *= steps[ancestor]
        probabilities.append(after)
    from scipy.optimize import linprog  # deferred: see the resispec package doc
    from scipy.sparse import coo_matrix, vstack

    capacity = coo_matrix((values, (rows, cols)), shape=(len(nodes), len(nodes)))
    budget = coo_matrix((np.ones(len(nodes)), ([node[-1] for node in nodes], np.arange(len(nodes)))),
                        shape=(p_array.size, len(nodes)))
    result = linprog(
        c=-np.ones(len(nodes)),
        A_ub=vstack([capacity, budget]).tocsr(),
        b_ub=np.concatenate([probabilities, p_array]),
        bounds=(0, None),
        method="highs",
    )
    if result.status != 0:
        raise RuntimeError(f"sequential WOR LP failed: {result.message}")
    return float(-result.fun)


def wor_all_in_probability(q: np.ndarray, members: np.ndarray, k: int) -> tuple[float, float]:
    """``(P_k(H), error estimate)``: the probability that all k WOR draws from q fall in ``members``."""
    q_array = as_distribution(q, "q (draft)")
    k = as_count(k)
    DRAFTING_SCHEMES["wor"].check_count(q_array, k)
    from resispec.race import Race  # compiled kernels: numba is imported on first use, not with resispec
    inside = np.zeros(q_array.size, dtype=bool)
    inside[as_token_set(members, q_array.size)] = True
    order = np.concatenate([np.flatnonzero(inside), np.flatnonzero(~inside)])
    value, error, _ = Race.of(q_array, k, order).all_in_prefixes()
    count = int(inside.sum())
    return float(value[count]), float(error[count])


@dataclass(frozen=True)
class PrefixBound:
    """``min over ratio prefixes H of p(H) + 1 - P_k(H)``, its error estimate and the best prefix.

    ``error`` is the largest error estimate over the prefixes (it bounds the error of the minimum).

    ``tokens`` are the ids of the minimising prefix (ratio order); ``value`` is an upper bound on
    alpha*-WOR, equal to it when that prefix minimises over all token sets.
    """

    value: float
    error: float
    tokens: np.ndarray


@dataclass(frozen=True)
class WorPrefixValues:
    """``value[i] = p(H_i) + 1 - P_k(H_i)`` for every ratio prefix ``H_i`` (the i lowest ratios, i = 0..V),
    ``error`` the largest error estimate of the ``P_k``, the ratio ``profile`` and q's ``race`` with its
    rows in ratio order (``resispec.race.Race``) and the pairs of its prefixes every CHECKPOINT rows
    (``prefix_pairs``, for ``Race.prefix_pair``), for callers that run further races on it."""

    profile: RatioProfile
    value: np.ndarray
    error: float
    race: Race
    prefix_pairs: np.ndarray


def wor_prefix_values(p: np.ndarray, q: np.ndarray, k: int) -> WorPrefixValues:
    """The values of every ratio prefix of validated ``(p, q)`` (``WorPrefixValues``)."""
    from resispec.race import Race  # compiled kernels: numba is imported on first use, not with resispec
    profile = RatioProfile(p, q)
    race = Race.of(q, k, profile.order)
    all_in, error, pairs = race.all_in_prefixes()
    return WorPrefixValues(profile=profile, value=1.0 + profile.p_prefix - all_in, error=float(error.max()),
                           race=race, prefix_pairs=pairs)


def wor_prefix_bound(p: np.ndarray, q: np.ndarray, k: int) -> PrefixBound:
    """alpha*-WOR over prefixes of the tokens sorted by ``p/q`` (any V; see the module docstring)."""
    p_array, q_array = as_pair(p, q)
    k = as_count(k)
    DRAFTING_SCHEMES["wor"].check_count(q_array, k)
    values = wor_prefix_values(p_array, q_array, k)
    best = int(np.argmin(values.value))
    return PrefixBound(value=min(float(values.value[best]), 1.0), error=values.error,
                       tokens=values.profile.order[:best].copy())
