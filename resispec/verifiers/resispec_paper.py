"""resispec_paper: the published ResiSpec Algorithm 1 as reconstructed from public reviews. BIASED.

Known-biased negative control. Candidates i.i.d.; accept x with probability ``min(1, r(x)/q(x))``;
on rejecting ``x0`` (so ``q(x0) > r(x0)``): budget ``Z = q(x0) - r(x0)``; reserve ``res(x0) = 0``,
``res(i) = min(Z q(i), r(i))`` for ``i != x0``; pour the deficit ``Z - sum(res)`` onto tokens
``i != x0`` in descending order of ``q(i)`` (ties by token id), each up to its capacity
``r(i) - res(i)``; the new target is ``norm(res)``. The output law is
``min(p, q) + sum_x (q - p)+(x) R_x`` with an x-dependent residual ``R_x``, which need not equal p:
``p = (.4, .3, .3)``, ``q = (.6, .3, .1)``, k = 1 emits ``(.4, .48, .12)``.
Acceptance: exact enumeration.
"""

from __future__ import annotations

from resispec.rows import Array, add_at_, float_errors_allowed, gather_rows, namespace, value_at, zero_at_
from resispec.verifiers.base import BatchedSequentialVerifier, RowStepGenerator


def pour_order(q: Array) -> Array:
    """Each row's token ids by descending ``q``, ties by ascending id (B, V)."""
    return namespace(q).argsort(-q, axis=-1, stable=True)


def paper_residual(target: Array, q: Array, rejected: Array, order: Array) -> Array:
    """The published proxy residual (B, V), normalised, after each row rejects ``rejected`` (B,).

    ``order``: ``pour_order(q)``. The deficit is poured with one cumulative sum over each row's pour
    order. Rows that could not reject (budget <= 0) come out meaningless; they accept at this step for
    sure and never use them.
    """
    xp = namespace(target, q)
    budget = (value_at(q, rejected) - value_at(target, rejected))[:, None]
    reserve = zero_at_(xp.minimum(budget * q, target), rejected)
    deficit = budget - xp.sum(reserve, axis=-1, keepdims=True)
    capacity = gather_rows(zero_at_(target - reserve, rejected), order)
    before = xp.cumulative_sum(capacity, axis=-1) - capacity
    poured = xp.minimum(xp.maximum(deficit - before, 0.0), capacity)
    add_at_(reserve, order, poured)
    with float_errors_allowed(reserve):  # a row without budget: 0 / 0, never read
        return reserve / xp.sum(reserve, axis=-1, keepdims=True)


class ResiSpecPaper(BatchedSequentialVerifier):
    """The published residual-shaping rule; a known-biased control (claims_exact = False)."""

    name = "resispec_paper"
    drafting = "iid"
    claims_exact = False
    k_independent = True
    colour = "tab:gray"

    def _row_plan(self, p: Array, q: Array, k: int) -> Array:
        """Each row's pour order, shared by the k steps."""
        return pour_order(q)

    def _row_steps(self, p: Array, q: Array, candidates: Array, plan: Array) -> RowStepGenerator:
        xp = namespace(p, q)
        target = p
        for i in range(candidates.shape[1]):
            target_x, q_x = value_at(target, candidates[:, i]), value_at(q, candidates[:, i])
            below = target_x < q_x  # divide only there: no overflow in the rows that accept for sure
            yield xp.where(below, target_x / xp.where(below, q_x, 1.0), 1.0)
            target = paper_residual(target, q, candidates[:, i], plan)
        return target
