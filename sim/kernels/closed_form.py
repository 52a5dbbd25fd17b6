"""Closed-form step statistics: verifiers whose residual does not depend on the candidates, pooled,
and resispec_wor at k <= 2.

Vectorised over the pairs of a batch (p, q of shape (N, V)) or pair by pair; the per-pair plans
(resispec's schedule, SpecTr's ``rho*``, the top-k set, pooled's selection law, resispec_wor's k = 2
plan) come from the core's own functions. ``tests/sim/test_sim_kernels.py`` pins every kernel to the core's
reference verifiers by enumeration on small instances.

- rrs: ``r_1 = p``, ``r_{i+1} = norm((r_i - q)+)`` whatever the candidates; step i accepts with
  probability ``c_i = sum min(r_i, q) = 1 - TV(r_i, q)`` given it is reached.
- spectr: every step accepts with probability ``beta = sum min(q, p / rho*)``; after i rejections the
  output law is ``norm(m sum_{l=i}^{k-1} (1 - beta)^l + (p - m F)+)``, ``m = min(q, p / rho*)``,
  ``F = (1 - (1 - beta)^k) / beta``.
- topk: candidates are the draft's top-k ``x_1..x_k``; step i accepts ``p(x_i)`` of the mass
  ``1 - sum_{j<i} p(x_j)`` that reaches it; the residual is p without ``x_1..x_{i-1}``, the proposal
  the point mass at ``x_i``.
- resispec: with the schedule ``T_1 >= ... >= T_k``, ``T_{k+1} = 0``, step j accepts mass
  ``g(T_j) - g(T_{j+1})`` and is reached with probability ``R_j``; after j - 1 rejections the output
  law is ``((p - T_1 q)+ + min(p, T_j q)) / R_j``.
- pooled (not sequential): one selection step, then one accept test. The selected token has law t
  (the plan's ``selection_law``), accepted with probability ``min(1, p/t)``: step 1 is reached with
  probability 1, accepts ``sum min(p, t)`` (= alpha*) and its drift is ``TV(p, t)`` (residual target p,
  proposal t); steps 2..k do not exist (reached 0), so the drift curve has one point.
- resispec_wor, k = 2 (the latest-first plan A, C, ``a_2``, f of ``resispec.verifiers.resispec_wor.plan``): step 1
  accepts ``sum A`` with drift ``TV(p, q)``; step 2 is reached with probability ``1 - sum A``, accepts
  ``sum min(p - A, C)``, and its drift is ``sum (p - A - C)+``: after rejecting x the target is
  ``r_x = q_{-x} a_2 + w_x f`` with ``w_x = 1 - <q_{-x}, a_2>``, and since ``f > 0`` only where
  ``a_2 = 1``, ``TV(r_x, q_{-x}) = w_x``, whose average ``sum_x s_x w_x`` is the all-rejected mass.
  k = 1 (or a draft with one token) is the single rrs step.
"""

from __future__ import annotations

import numpy as np

from resispec.drafting import top_k_tokens
from resispec.row_ratio_profile import RowRatioProfile
from resispec.sim.batch import PairBatch
from resispec.sim.steps import StepStats
from resispec.verifiers import get_verifier
from resispec.verifiers.resispec.plan import schedule_from_profile
from resispec.verifiers.resispec_wor.plan import latest_first_plan
from resispec.verifiers.spectr import spectr_plan


def total_variation(measure: np.ndarray, proposal: np.ndarray) -> np.ndarray:
    """``TV(norm(measure_n), proposal_n)`` per row (shape (N,)); 0 for a row of zero mass."""
    mass = measure.sum(axis=1, keepdims=True)
    law = np.divide(measure, mass, out=np.zeros_like(measure), where=mass > 0)
    return np.where(mass[:, 0] > 0, 0.5 * np.abs(law - proposal).sum(axis=1), 0.0)


def rrs_stats(batch: PairBatch, k: int) -> StepStats:
    """rrs by its candidate-free residual chain (``TV(r_i, q) = sum (r_i - q)+`` is the rejection rate)."""
    size = len(batch)
    accepted, reached, drift = (np.zeros((size, k)) for _ in range(3))
    target, excess = batch.p.copy(), np.empty_like(batch.p)
    reach = np.ones(size)
    for i in range(k):
        np.subtract(target, batch.q, out=excess)
        np.maximum(excess, 0.0, out=excess)
        rejection = np.minimum(excess.sum(axis=1), 1.0)
        reached[:, i], drift[:, i] = reach, reach * rejection
        accepted[:, i] = reach * (1.0 - rejection)
        reach = reach * rejection
        np.divide(excess, rejection[:, None], out=target, where=rejection[:, None] > 0)
    return StepStats("rrs", k, accepted, reached, drift, exact=True)


def spectr_stats(batch: PairBatch, k: int) -> StepStats:
    """SpecTr k-SEQ: a constant rate ``beta`` per step, ``rho*`` from the core's ``spectr_plan``."""
    plan = spectr_plan(batch.p, batch.q, k)  # every pair's rho* at once, the core's rows
    rho = plan.rho[:, None]
    beta = np.minimum(plan.beta, 1.0)  # rounding can put beta above 1 (p == q)
    factor = plan.factor[:, None]
    kept = np.minimum(batch.q, batch.p / rho)
    final = np.maximum(batch.p - kept * factor, 0.0)
    survival = (1.0 - beta)[:, None] ** np.arange(k)
    remaining_weight = np.cumsum(survival[:, ::-1], axis=1)[:, ::-1]
    drift = np.empty((len(batch), k))
    for i in range(k):
        drift[:, i] = survival[:, i] * total_variation(kept * remaining_weight[:, i, None] + final, batch.q)
    return StepStats("spectr", k, survival * beta[:, None], survival, drift, exact=True)


def topk_stats(batch: PairBatch, k: int) -> StepStats:
    """Top-k drafting (the core's ``top_k_tokens``); k is capped at the draft's support."""
    size = len(batch)
    accepted, reached, drift = (np.zeros((size, k)) for _ in range(3))
    for n, (p, q) in enumerate(zip(batch.p, batch.q)):
        candidates = top_k_tokens(q, min(k, int(np.count_nonzero(q))))
        others = np.ones(p.size, dtype=bool)
        others[candidates] = False
        mass = p[candidates]
        # mass reaching step i = p(non-candidates) + p(x_i..x_k), summed directly (no 1 - sum cancellation)
        reach = p[others].sum() + np.cumsum(mass[::-1])[::-1]
        steps = candidates.size
        accepted[n, :steps], reached[n, :steps] = mass, reach
        drift[n, :steps] = np.append(reach[1:], p[others].sum())
    return StepStats("topk", k, accepted, reached, drift, exact=True)


def resispec_stats(batch: PairBatch, k: int) -> StepStats:
    """resispec from the core's optimal schedule (every pair at once): accepted mass ``g(T_j) - g(T_{j+1})``,
    reach ``R_j``."""
    profile = RowRatioProfile(batch.p, batch.q)
    plan = schedule_from_profile(profile, k)
    g = profile.g(np.concatenate([plan.T, np.zeros((len(batch), 1))], axis=1))
    drift = shaped_residual_drift(profile, plan.T, plan.R, g[:, :-1])
    return StepStats("resispec", k, g[:, :-1] - g[:, 1:], plan.R, drift, exact=True)


def shaped_residual_drift(profile: RowRatioProfile, T: np.ndarray, R: np.ndarray, g_T: np.ndarray) -> np.ndarray:
    """``sum_x (m_j(x) - R_j q(x))+`` for every pair (row) and step j from the ratio profiles, O(k log V) per
    pair, where ``m_j = min(p, T_j q) + (p - T_1 q)+`` is the mass left after j - 1 rejections; it equals
    ``R_j TV(r_j, q)`` because ``m_j`` has mass ``R_j``. ``T``, ``R``, ``g_T`` (N, k).

    ``m_j(x) = q(x) phi_j(rho(x))`` with ``phi_j(rho) = min(rho, T_j) + (rho - T_1)+``, non-decreasing,
    so ``m_j > R_j q`` exactly on the tokens with ratio above ``rho* = R_j`` if ``R_j < T_j``, else
    ``T_1 + R_j - T_j``. Over that suffix the sum is ``sum min(p, T_j q) + sum (p - T_1 q)+ - R_j q(suffix)``,
    each term read off the prefix sums P, Q in ratio order (tokens with ``q = 0`` sort last).
    """
    P, Q = profile.p_prefix, profile.q_prefix
    first = T[:, :1]
    cut = np.where(R < T, R, first + R - T)
    a, b, c = (profile.piece_of(s) for s in (np.minimum(cut, T), cut, np.maximum(cut, first)))
    P_a, P_c = np.take_along_axis(P, a, axis=1), np.take_along_axis(P, c, axis=1)
    Q_a, Q_b, Q_c = (np.take_along_axis(Q, piece, axis=1) for piece in (a, b, c))
    kept = g_T - (P_a + T * (Q_b - Q_a))
    tail = (P[:, -1:] - P_c) - first * (Q[:, -1:] - Q_c)
    return np.maximum(kept + tail - R * (Q[:, -1:] - Q_b), 0.0)


def _selection_stats(name: str, batch: PairBatch, k: int) -> StepStats:
    """A select-then-verify verifier (pooled, pooled_wor): its one selection step, accepted
    ``sum min(p, t)`` (the core's closed form), drift ``TV(p, t)``. WOR drafting caps k at q's support."""
    size = len(batch)
    accepted, reached, drift = (np.zeros((size, k)) for _ in range(3))
    verifier = get_verifier(name)
    for n, (p, q) in enumerate(zip(batch.p, batch.q)):
        drawn = k if verifier.drafting == "iid" else min(k, int(np.count_nonzero(q)))
        bound = verifier.bind(p, q, drawn)
        accepted[n, 0], reached[n, 0] = bound.acceptance(), 1.0
        drift[n, 0] = 0.5 * np.abs(p - bound.plan.selection_law[0]).sum()
    return StepStats(name, k, accepted, reached, drift, exact=True)


def pooled_stats(batch: PairBatch, k: int) -> StepStats:
    """pooled (i.i.d. candidates): ``_selection_stats``."""
    return _selection_stats("pooled", batch, k)


def pooled_wor_stats(batch: PairBatch, k: int) -> StepStats:
    """pooled_wor (WOR candidates, k capped at q's support): ``_selection_stats``."""
    return _selection_stats("pooled_wor", batch, k)


def resispec_wor_stats(batch: PairBatch, k: int) -> StepStats:
    """resispec_wor at k <= 2 from the latest-first plans of every pair at once (module docstring); k is
    capped at q's support."""
    if k > 2:
        raise ValueError(f"k: resispec_wor has a closed form for k <= 2 only, got {k}")
    size = len(batch)
    accepted, reached, drift = (np.zeros((size, k)) for _ in range(3))
    reached[:, 0], drift[:, 0] = 1.0, 0.5 * np.abs(batch.p - batch.q).sum(axis=1)
    accepted[:, 0] = np.minimum(batch.p, batch.q).sum(axis=1)
    rows = np.flatnonzero(np.count_nonzero(batch.q, axis=1) >= 2) if k == 2 else np.zeros(0, dtype=np.int64)
    if rows.size:
        plan = latest_first_plan(batch.p[rows], batch.q[rows])
        accepted[rows, 0] = plan.accepted.sum(axis=1)
        reached[rows, 1] = (plan.draft - plan.accepted).sum(axis=1)  # sum of s, no 1 - sum A cancellation
        accepted[rows, 1] = np.minimum(plan.target - plan.accepted, plan.reach).sum(axis=1)
        drift[rows, 1] = plan.residual.sum(axis=1)
    return StepStats("resispec_wor", k, accepted, reached, drift, exact=True)
