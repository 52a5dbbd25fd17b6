"""Upper bounds on the acceptance of exact verifiers, and the linear programs behind them.

- i.i.d. optimum (any exact verifier, joint or sequential): ``alpha* = min_H [p(H) + 1 - q(H)^k]``,
  the min cut of the transport LP; the minimising H can be taken among prefixes of the tokens sorted
  by ``p/q`` ascending, so ``alpha* = 1 - max_i (Q_i^k - P_i)`` over ratio prefixes (O(V log V)).
- Transport LP (small V): variables ``pi(S, y) >= 0`` for each set S of distinct candidates and each
  ``y in S``; maximise ``sum pi`` subject to ``sum_y pi(S, y) <= P(S)`` and
  ``sum_S pi(S, y) <= p(y)``. (A plan over ordered tuples aggregates to one over sets and back, so
  sets lose nothing.) Both constraints are written as ``<=``: equalities can fail HiGHS on rounding.
- WOR: ``optimal_acceptance(..., "wor")`` is alpha*-WOR; the sequential WOR optimum and the bound
  over ratio prefixes for large V are in ``resispec.bounds_wor``.
- Sequential optimum (i.i.d.): per-step accepted masses ``m_j(x) >= 0`` with
  ``m_j(x) <= R_j q(x)``, ``sum_j m_j(x) <= p(x)``, ``R_1 = 1``, ``R_{j+1} = R_j - sum_x m_j(x)``;
  maximise ``1 - R_{k+1}``. resispec's ``1 - z`` equals it for every V and k (LP duality;
  theorem ``resispec.sequential_optimal`` in docs/theory.md).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from resispec.bounds_wor import wor_prefix_bound
from resispec.drafting import DRAFTING_SCHEMES, top_k_tokens
from resispec.enumeration import magnitude
from resispec.limits import LP_MAX_TUPLES, SEQUENTIAL_LP_MAX_VARIABLES, check_limit
from resispec.ratio_profile import RatioProfile
from resispec.validation import as_count, as_pair


def _check_drafting(drafting: str) -> str:
    if drafting not in DRAFTING_SCHEMES:
        raise ValueError(f"drafting: expected one of {sorted(DRAFTING_SCHEMES)}, got {drafting!r}")
    return drafting


def optimal_acceptance(p: np.ndarray, q: np.ndarray, k: int, drafting: str = "iid") -> float:
    """Best acceptance any exact verifier reaches with k candidates drafted by ``drafting``.

    ``"iid"``: closed form ``1 - max over ratio prefixes (Q_i^k - P_i)``, O(V log V), any V.
    ``"topk"``: the candidate set is fixed, so ``p(top-k of q)``.
    ``"wor"``: alpha*-WOR ``= min_H [p(H) + 1 - P(all k WOR draws in H)]``. Exact (the transport LP)
    while it enumerates at most ``LP_MAX_TUPLES`` tuples; beyond that the minimum over ratio prefixes
    (``bounds_wor.wor_prefix_bound``), an upper bound on alpha*-WOR that equalled it on every small
    instance checked (prefixes are not proven to suffice for WOR).
    """
    p_array, q_array = as_pair(p, q)
    k = as_count(k)
    drafting = _check_drafting(drafting)
    if drafting == "topk":
        DRAFTING_SCHEMES["topk"].check_count(q_array, k)
        return float(p_array[top_k_tokens(q_array, k)].sum())
    if drafting == "wor":
        if DRAFTING_SCHEMES["wor"].tuple_count(q_array, k) <= LP_MAX_TUPLES:
            return optimal_acceptance_lp(p_array, q_array, k, "wor")
        return wor_prefix_bound(p_array, q_array, k).value
    return optimal_cut(RatioProfile(p_array, q_array), k)[1]


def optimal_cut(profile: RatioProfile, k: int) -> tuple[int, float]:
    """``(i*, alpha*)``: the first ratio prefix maximising ``Q_i^k - P_i`` and ``alpha* = 1 - max``.

    ``H* =`` the ``i*`` tokens of smallest ratio (``profile.order[:i*]``); ``i* = 0`` (``H*`` empty,
    gain 0) is a candidate, so the maximum is ``>= 0`` and ``alpha* <= 1``.
    """
    gain = profile.q_prefix ** k - profile.p_prefix
    cut = int(np.argmax(gain))
    return cut, float(1.0 - max(gain[cut], 0.0))


def _set_probabilities(q: np.ndarray, k: int, drafting: str) -> dict[frozenset[int], float]:
    """Probability of each set of distinct candidates under the drafting rule (by enumeration)."""
    scheme = DRAFTING_SCHEMES[drafting]
    scheme.check_count(q, k)
    count = scheme.tuple_count(q, k)
    if count > LP_MAX_TUPLES:
        raise ValueError(
            f"the transport LP would enumerate {magnitude(count)} candidate tuples, more than {LP_MAX_TUPLES}; "
            "use a smaller vocabulary or k"
        )
    sets: dict[frozenset[int], float] = defaultdict(float)
    for candidates, probability in scheme.tuples(q, k):
        sets[frozenset(candidates)] += probability
    return sets


def optimal_acceptance_lp(p: np.ndarray, q: np.ndarray, k: int, drafting: str = "iid") -> float:
    """The transport LP optimum (small V): the best acceptance of any exact verifier."""
    p_array, q_array = as_pair(p, q)
    k = as_count(k)
    sets = list(_set_probabilities(q_array, k, _check_drafting(drafting)).items())
    rows, cols, column = [], [], 0
    token_of_column = []
    for set_index, (members, _) in enumerate(sets):
        for token in sorted(members):
            rows.append(set_index)
            cols.append(column)
            token_of_column.append(token)
            column += 1
    from scipy.optimize import linprog  # deferred: see the resispec package doc
    from scipy.sparse import coo_matrix, vstack

    set_rows = coo_matrix((np.ones(column), (rows, cols)), shape=(len(sets), column))
    token_rows = coo_matrix((np.ones(column), (token_of_column, np.arange(column))), shape=(p_array.size, column))
    result = linprog(
        c=-np.ones(column),
        A_ub=vstack([set_rows, token_rows]).tocsr(),
        b_ub=np.concatenate([[probability for _, probability in sets], p_array]),
        bounds=(0, None),
        method="highs",
    )
    if result.status != 0:
        raise RuntimeError(f"transport LP failed: {result.message}")
    return float(-result.fun)


def sequential_optimum_lp(p: np.ndarray, q: np.ndarray, k: int) -> float:
    """The LP over per-step accepted masses of sequential verifiers of i.i.d. candidates.

    Variables ``m_j(x)`` (index ``j V + x``); with ``R_j = 1 - sum_{i<j} sum_y m_i(y)`` the capacity
    constraint reads ``m_j(x) + q(x) sum_{i<j} sum_y m_i(y) <= q(x)``.
    """
    p_array, q_array = as_pair(p, q)
    k = as_count(k)
    size = p_array.size
    check_limit(k * size, SEQUENTIAL_LP_MAX_VARIABLES, "k * V", "the sequential LP's variable count")
    capacity = np.zeros((k * size, k * size))
    for j in range(k):
        block = slice(j * size, (j + 1) * size)
        capacity[block, block] = np.eye(size)
        capacity[block, : j * size] = q_array[:, None]
    budget = np.tile(np.eye(size), k)
    from scipy.optimize import linprog  # deferred: see the resispec package doc

    result = linprog(
        c=-np.ones(k * size),
        A_ub=np.vstack([capacity, budget]),
        b_ub=np.concatenate([np.tile(q_array, k), p_array]),
        bounds=(0, None),
        method="highs",
    )
    if result.status != 0:
        raise RuntimeError(f"sequential LP failed: {result.message}")
    return float(-result.fun)
