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
  (``resispec.wor_shaping``).
- **alpha*-WOR over ratio prefixes** (any V, ``wor_prefix_bound``). Every exact verifier accepts at
  most ``p(H) + 1 - P_k(H)`` for every token set H, ``P_k(H)`` = probability that all k WOR draws fall
  in H (the min cut of the transport LP; ``bounds.optimal_acceptance_lp`` minimises over all H). Unlike
  the i.i.d. case, ``P_k(H)`` is not a function of ``q(H)`` alone (for fixed ``q(H)``, one heavy token
  and many light ones differ), so ratio prefixes need not contain the minimiser: the minimum over
  prefixes is an upper bound on alpha*-WOR (equal when a prefix is a minimiser) and hence on the
  acceptance of every exact WOR verifier.
- **P_k(H) by an exponential race** (``wor_all_in_probability``): WOR draws are the arrival order of
  independent clocks ``E_x ~ Exp(q_x)`` (Gumbel-top-k). All k first arrivals lie in H iff the k-th
  arrival in H precedes the first arrival outside H, which is ``Exp(1 - q(H))``, independent:

      P_k(H) = int_0^inf (1 - m) e^{-(1 - m) t} G_H(t) dt,   m = q(H),
      G_H(t) = P(at least k of the clocks in H ring by t), each ringing w.p. 1 - e^{-q_x t} (independent).

  ``G_H`` (a Poisson-binomial tail) comes from a dynamic programme over the tokens of H: states "j rung"
  for j < k plus an absorbing "at least k", each update a convex combination (no cancellation). The
  integral is taken in ``u = ln t``, where the integrand is smooth on a unit scale and analytic in the
  strip ``|Im u| < pi/2``, so the trapezoid rule with step h converges geometrically
  (error ~ ``exp(-pi^2 / h)``, Trefethen & Weideman 2014). The grid runs from ``t_lo`` with
  ``t_lo^(k+1) / k! <= TAIL`` (the left tail is at most ``G(t_lo) (1 - m) t_lo <= t_lo^(k+1) / k!``) to
  ``t_hi = ln(1/TAIL) / (1 - m)`` (the right tail is at most ``e^{-(1 - m) t_hi}``). Error estimate:
  the same sum on every other node (step 2h) differs from the step-h sum by about the step-2h error,
  which geometric convergence makes far larger than the step-h error; the reported ``error`` is that
  difference plus both tail bounds. Prefixes share one DP over tokens in ratio order (O(V k N) for N
  nodes, N ~ 800).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix, vstack

from resispec.drafting import DRAFTING_SCHEMES, undrawn_mass
from resispec.limits import SEQUENTIAL_LP_MAX_NODES
from resispec.ratio_profile import RatioProfile
from resispec.validation import as_count, as_distribution, as_pair, as_token_set

STEP = 0.1
"""Trapezoid step in ``u = ln t``."""

TAIL = 1e-17
"""Each truncated tail of the race integral is at most this."""


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


@dataclass(frozen=True)
class RaceIntegrals:
    """``P_k`` of every prefix of a token order: ``value[i]`` for the first i tokens (i = 0..n)."""

    value: np.ndarray
    error: np.ndarray


def _race_integrals(q_in_order: np.ndarray, outside: np.ndarray, k: int) -> RaceIntegrals:
    """``P_k`` of each prefix of ``q_in_order`` (shape (n,)) by the race integral (module docstring).

    ``outside[i]`` (shape (n + 1,)) is the draft mass outside the first i tokens, summed directly.
    Prefixes with no outside mass get ``P_k = 1`` if they hold at least k drafted tokens; prefixes of
    fewer than k tokens get 0.
    """
    n = q_in_order.size
    value, error = np.zeros(n + 1), np.zeros(n + 1)
    live = np.flatnonzero(outside > 0)
    value[outside <= 0] = float(np.count_nonzero(q_in_order) >= k)
    evaluate = live[live >= k]
    if evaluate.size == 0:
        return RaceIntegrals(value, error)
    t_lo = math.exp((math.log(TAIL) + math.lgamma(k + 1)) / (k + 1))  # (TAIL k!)^(1/(k+1)), in logs: k! overflows a float past k = 170
    t_hi = math.log(1.0 / TAIL) / float(outside[evaluate].min())
    nodes = 2 * math.ceil((math.log(t_hi) - math.log(t_lo)) / (2 * STEP)) + 1  # odd: the 2h grid is a subset
    t = np.exp(np.linspace(math.log(t_lo), math.log(t_hi), nodes))
    step = (math.log(t_hi) - math.log(t_lo)) / (nodes - 1)
    coarse = np.zeros(nodes)
    coarse[::2] = 2.0
    state = np.zeros((k + 1, nodes))  # state[j] = P(j clocks rung), j < k; state[k] = P(at least k)
    state[0] = 1.0
    wanted = np.zeros(n + 1, dtype=bool)
    wanted[evaluate] = True
    for i in range(1, evaluate[-1] + 1):
        stay = np.exp(-q_in_order[i - 1] * t)
        ring = -np.expm1(-q_in_order[i - 1] * t)
        state[k] += state[k - 1] * ring
        state[1:k] = state[1:k] * stay + state[:k - 1] * ring
        state[0] *= stay
        if wanted[i]:
            rate = outside[i]
            integrand = rate * t * np.exp(-rate * t) * state[k]
            fine = step * integrand.sum()
            value[i] = fine
            error[i] = abs(fine - step * float((coarse * integrand).sum())) + 2 * TAIL
    return RaceIntegrals(value, error)


def _outside_masses(q_in_order: np.ndarray) -> np.ndarray:
    """``outside[i]`` = draft mass after the first i tokens (shape (n + 1,)), as suffix sums."""
    outside = np.zeros(q_in_order.size + 1)
    outside[:-1] = np.cumsum(q_in_order[::-1])[::-1]
    return outside


def wor_all_in_probability(q: np.ndarray, members: np.ndarray, k: int) -> tuple[float, float]:
    """``(P_k(H), error estimate)``: the probability that all k WOR draws from q fall in ``members``."""
    q_array = as_distribution(q, "q (draft)")
    k = as_count(k)
    DRAFTING_SCHEMES["wor"].check_count(q_array, k)
    inside = np.zeros(q_array.size, dtype=bool)
    inside[as_token_set(members, q_array.size)] = True
    ordered = np.concatenate([q_array[inside], q_array[~inside]])
    integrals = _race_integrals(ordered, _outside_masses(ordered), k)
    count = int(inside.sum())
    return float(integrals.value[count]), float(integrals.error[count])


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


def wor_prefix_values(p: np.ndarray, q: np.ndarray, k: int) -> tuple[RatioProfile, np.ndarray, float]:
    """``(profile, value, error)``: ``value[i] = p(H_i) + 1 - P_k(H_i)`` for every ratio prefix ``H_i`` (the
    i lowest ratios, i = 0..V) of validated ``(p, q)``, and the largest error estimate of the ``P_k``."""
    profile = RatioProfile(p, q)
    ordered = q[profile.order]
    integrals = _race_integrals(ordered, _outside_masses(ordered), k)
    return profile, 1.0 + profile.p_prefix - integrals.value, float(integrals.error.max())


def wor_prefix_bound(p: np.ndarray, q: np.ndarray, k: int) -> PrefixBound:
    """alpha*-WOR over prefixes of the tokens sorted by ``p/q`` (any V; see the module docstring)."""
    p_array, q_array = as_pair(p, q)
    k = as_count(k)
    DRAFTING_SCHEMES["wor"].check_count(q_array, k)
    profile, values, error = wor_prefix_values(p_array, q_array, k)
    best = int(np.argmin(values))
    value = min(float(values[best]), 1.0)
    return PrefixBound(value=value, error=error, tokens=profile.order[:best].copy())
