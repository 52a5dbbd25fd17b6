"""pooled_wor's mixture: where the scan falls short of the WOR ceiling, mix it with "latest in order" rules.

Achievable selection laws (theorem ``pooled_wor.achievable_laws``, docs/pooled_wor.md): ``t`` is the
law of some selection rule on WOR candidates iff ``t(B) >= P_k(B)`` for every token set B and
``t(V) = 1``, a base polytope whose vertices are the rules "select the candidate latest in the order
pi", of law

    t_pi(pi_i) = P_k(A_i) - P_k(A_(i-1)),     A_i = {pi_1, ..., pi_i},

i.e. one pass of ``P_k`` over the prefixes of pi (``resispec.race.Race.all_in_prefixes``). Every mixture
of exact rules is an exact rule, of the mixed law, and by theorem ``pooled_wor.ceiling_reachable`` the
best mixture accepts alpha*-WOR exactly.

Column generation finds one. Columns: the scan's law ``t_0`` and vertices ``t_1 .. t_m``. The master LP

    max sum_y z_y   s.t.  0 <= z_y <= p_y,   z_y <= sum_j w_j t_j(y),   w >= 0,   sum_j w_j = 1

is the best acceptance ``sum_y min(p_y, t_y)`` of a mixture of the columns (scipy's HiGHS). With
``lambda_y >= 0`` the duals of the second constraints, a column of larger ``sum_y lambda_y t(y)`` than
every current one can raise the value; the largest over all rules is reached, set by set, by selecting
the candidate of largest ``lambda``: the vertex of pi sorted by ``lambda`` ascending (ties by the ratio
order), Edmonds' greedy. Any ``lambda >= 0`` also bounds every rule's acceptance (Lagrangian duality):

    max_t sum_y min(p_y, t_y) <= sum_y p_y (1 - lambda_y)+ + sum_y lambda_y t_lambda(y),

``t_lambda`` the greedy vertex of ``lambda``. Each round prices at the duals smoothed towards those of
the least bound so far (Wentges: ``SMOOTHING center + (1 - SMOOTHING) lambda``, which damps the
oscillation of the duals that makes plain column generation tail off), falling back to the LP's own
duals when the smoothed vertex does not price above the columns, and adds the vertex. It stops when
the value is within ``MIXTURE_GAP`` of the least ratio-prefix value (``bound``, at least alpha*-WOR) or
of the least dual bound, when no vertex prices above the current columns at the LP's own duals (then the
value is alpha*-WOR, the LP optimum over the whole polytope), or after its rounds (``MIXTURE_ROUNDS``,
fewer at large V). Every vertex costs a sort, one prefix pass (O(V k N)) and one LP solve.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from resispec.race import Race

MIXTURE_TRIGGER = 1e-6
"""The mixture is built only where the scan's acceptance is below the least ratio-prefix value by more
than this: each round costs a prefix pass and an LP (0.1-0.3 s at V = 49152), not worth a gain below
1e-6."""

MIXTURE_GAP = 1e-9
"""Column generation stops once within this of the least prefix value or of the least dual bound, and
a mixture is kept only if it beats the scan by more than this."""

MIXTURE_ROUNDS = 24
"""At most this many rounds (vertices) per plan: small instances reach the LP optimum within 8; on real
rows the gains past the first 24 rounds are below 1e-4 and each round costs a prefix pass and an LP."""

MIXTURE_TOKEN_ROUNDS, FEWEST_ROUNDS = 1 << 18, 6
"""Large vocabularies get fewer rounds, ``clip(MIXTURE_TOKEN_ROUNDS // V, FEWEST_ROUNDS, MIXTURE_ROUNDS)``
(24 up to V = 10922, 6 at V = 49152, where a round costs about 0.3 s): deterministic, so a plan does not
depend on the machine's speed. Its value stalls for several rounds before rising on some instances, so
a stall is no stopping rule."""

SMOOTHING = 0.7
"""Duals are smoothed towards the best dual bound's (Wentges): price at ``0.7 center + 0.3 lambda``."""

PRICE_TOLERANCE = 1e-12
"""A new vertex must price above every current column by more than this to be added."""


@dataclass(frozen=True)
class Mixture:
    """The selection rule as a mixture: the scan with probability ``scan_weight``, else the rule "latest
    in order j" with probability ``weights[j]``; ``ranks`` (m, V) int32: the position of each token id
    in order j; ``law`` (V,): ``scan_weight t_0 + sum_j weights[j] t_j``."""

    scan_weight: float
    weights: np.ndarray
    ranks: np.ndarray
    law: np.ndarray


def scan_only(scan_law: np.ndarray) -> Mixture:
    """The scan alone (weight 1, no vertex)."""
    return Mixture(scan_weight=1.0, weights=np.zeros(0), ranks=np.zeros((0, scan_law.size), dtype=np.int32),
                   law=scan_law)


def vertex_law(race: Race, race_row: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``t_pi`` (V,) by token id for ``pi = order`` (token ids): differences of ``P_k`` of pi's prefixes,
    the race's exponentials reused in pi's row order (``race_row``: the race row of each token id).
    Tokens with q = 0 get exactly 0; rounding below 0 is clipped."""
    from resispec.race import Race  # compiled kernels: numba is imported on first use, not with resispec
    rows = race_row[order]
    in_order = Race(order=order, rate=race.rate[rows], k=race.k, grid=race.grid, stay=race.stay[rows],
                    ring=race.ring[rows])
    law = np.empty(order.size)
    law[order] = np.maximum(np.diff(in_order.all_in_prefixes()[0]), 0.0)
    return law


def best_mixture(p: np.ndarray, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(weights, prices)``: the optimal weights (m,) of the master LP of the module docstring over
    ``columns`` (m, V) and its duals ``lambda`` (V,) of ``z <= sum_j w_j t_j``; None if the solver fails.
    Feasibility tolerances 1e-10 (at HiGHS's default 1e-7, summed over many tokens, the solver's value
    exceeded the true ``sum min(p, t)`` of its weights by about 1e-6 at V = 49152, so the caller takes
    the weights' true value, not the solver's).

    Only tokens where the columns straddle p need a ``z``: where every column is at most p,
    ``z_y = sum_j w_j t_j(y)`` (linear in w, ``lambda_y = 1``); where every column is at least p,
    ``z_y = p_y`` (``lambda_y = 0``). The LP keeps the straddling tokens only (few, and it leaves out
    the tiny masses of the tail that strain the solver)."""
    from scipy import sparse  # deferred: see the resispec package doc
    from scipy.optimize import linprog

    below, above = (columns <= p).all(axis=0), (columns >= p).all(axis=0)
    straddle = np.flatnonzero(~(below | above))
    m, size = columns.shape[0], straddle.size
    linked = sparse.hstack([sparse.csr_matrix(-columns[:, straddle].T), sparse.identity(size, format="csr")],
                           format="csr")
    gain = -np.concatenate([columns[:, below].sum(axis=1), np.ones(size)])
    result = linprog(gain, A_ub=linked, b_ub=np.zeros(size), A_eq=np.concatenate([np.ones(m), np.zeros(size)])[None],
                     b_eq=[1.0], bounds=[(0, None)] * m + list(zip(np.zeros(size), p[straddle])), method="highs",
                     options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    if result.status != 0 or not np.isfinite(result.x).all():
        return None
    prices = below.astype(float)
    prices[straddle] = np.maximum(-result.ineqlin.marginals, 0.0)
    return result.x[:m], prices


def mixture(p: np.ndarray, race: Race, ratio_rank: np.ndarray, scan_law: np.ndarray, bound: float) -> Mixture:
    """Column generation from the scan's law ``scan_law`` (module docstring); ``ratio_rank`` (V,) the
    ratio rank of each token id (the race's rows are in ratio order), ``bound`` the least ratio-prefix
    value. Returns the scan alone when no mixture accepts more than it by more than ``MIXTURE_GAP``."""
    target = min(bound, 1.0) - MIXTURE_GAP
    scan_value = float(np.minimum(p, scan_law).sum())
    if scan_value >= min(bound, 1.0) - MIXTURE_TRIGGER:
        return scan_only(scan_law)
    columns, orders, weights = [scan_law], [], np.ones(1)
    center, ceiling = None, np.inf
    for _ in range(min(max(MIXTURE_TOKEN_ROUNDS // p.size, FEWEST_ROUNDS), MIXTURE_ROUNDS)):
        solved = best_mixture(p, np.array(columns))
        if solved is None:  # the solver failed: keep the last solved weights (any weights are exact)
            columns = columns[:weights.size]
            break
        weights, prices = solved
        value = float(np.minimum(p, np.maximum(weights, 0.0) @ np.array(columns)).sum())
        if value >= min(target, ceiling - MIXTURE_GAP):
            break
        priced = max(prices @ law for law in columns) + PRICE_TOLERANCE
        for duals in ([prices] if center is None else [SMOOTHING * center + (1 - SMOOTHING) * prices, prices]):
            order = np.lexsort((ratio_rank, duals))
            column = vertex_law(race, ratio_rank, order)
            dual_bound = float(np.maximum(p * (1 - duals), 0.0).sum() + duals @ column)
            if dual_bound < ceiling:
                center, ceiling = duals, dual_bound
            if prices @ column > priced:
                break
        else:  # not even the LP's own duals price a vertex above the columns: the value is alpha*-WOR
            break
        columns.append(column)
        orders.append(order)
    else:
        solved = best_mixture(p, np.array(columns))
        weights = solved[0] if solved is not None else np.append(weights, 0.0)
    weights = np.maximum(weights, 0.0) / np.maximum(weights, 0.0).sum()
    law = weights @ np.array(columns)
    if float(np.minimum(p, law).sum()) <= scan_value + MIXTURE_GAP:
        return scan_only(scan_law)
    used = np.flatnonzero(weights[1:] > 0)
    ranks = np.empty((used.size, p.size), dtype=np.int32)
    for row, j in enumerate(used):
        ranks[row, orders[j]] = np.arange(p.size, dtype=np.int32)
    return Mixture(scan_weight=float(weights[0]), weights=weights[1:][used], ranks=ranks, law=law)
