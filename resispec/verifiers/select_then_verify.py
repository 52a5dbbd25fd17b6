"""Select-then-verify verifiers (pooled, pooled_wor), written once over rows for NumPy and torch alike.

Such a verifier *selects* one of its k candidates by a randomised rule whose selected token has a known
law ``t``, then runs single-draft speculative sampling of the selected token y against p: accept y with
probability ``a(y) = min(1, p(y)/t(y))``, else emit from ``norm((p - t)+)``. It is exact for any
selection rule whose true law is ``t``: ``min(p, t) + (p - t)+ = p``; its acceptance is
``sum_y min(p(y), t(y))`` (docs/pooled.md).

A rule states three things over B rows with the array API (``resispec.rows``): ``_row_plan(p, q, k)``, a
plan with ``selection_law`` ``t``, ``accept`` ``a``, ``residual`` ``(p - t)+`` on p's support
(``resispec.residual.supported_residual``: never without mass) and its ``residual_sampler``
(``RowInverseCDF``), all (B, V) by token id; ``_row_select(plan, candidates, u)``, the selected
candidate's index (B,) from the selection uniforms; ``_row_selection_probabilities(plan, candidates)``,
the exact probability (B, k) that each candidate is the one selected. This class turns them into the
decision and the exact law over rows (``_row_decide``, ``_row_law``), and runs those at B = 1 for the
single-instance API (``verify``, ``conditional_law``, ``bind``, ...); the engine runs the same methods
on (B, V) tensors (``resispec.engine.verifiers.base.TorchVerifier``).

Uniform layout: the rule's selection uniforms first (``uniforms_needed(k) - 2`` of them), then
``u[-2]`` accepts the selected candidate y iff ``u[-2] < a(y)``, and ``u[-1]`` draws the residual by
inverse CDF over token ids ascending. Returned index: the selected candidate's position on acceptance,
-1 for a residual draw. A selected token with ``p = 0`` has ``a = 0``, so it is never accepted.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np

from resispec.rows import Array, add_at_, gather_rows, namespace, value_at
from resispec.verifiers.base import BoundVerifier, Verifier, in_row_chunks


class SelectThenVerify(Verifier):
    """Select one candidate by a rule of exact law ``t``, then single-draft speculative sampling of it."""

    @abstractmethod
    def _row_plan(self, p: Array, q: Array, k: int) -> Any:
        """Per-row work shared by every candidate tuple, for validated float64 ``p``, ``q`` (B, V)."""

    @abstractmethod
    def _row_select(self, plan: Any, candidates: Array, u: Array) -> Array:
        """Index (B,) of the selected candidate of each row: candidates (B, k), selection uniforms ``u``."""

    @abstractmethod
    def _row_selection_probabilities(self, plan: Any, candidates: Array) -> Array:
        """``s`` (B, k): the probability that candidate i is the one selected, given the candidates."""

    def _row_decide(self, plan: Any, candidates: Array, u: Array) -> tuple[Array, Array]:
        """``(tokens, index)`` (B,) each for candidates (B, k) and uniforms (B, uniforms_needed(k))."""
        xp = namespace(candidates)
        index = self._row_select(plan, candidates, u[:, :-2])
        selected = value_at(candidates, index)
        accepted = u[:, -2] < value_at(plan.accept, selected)
        return xp.where(accepted, selected, plan.residual_sampler(u[:, -1])), xp.where(accepted, index, -1)

    def _row_split(self, plan: Any, candidates: Array) -> tuple[Array, Array]:
        """``(accepted (B, k), rejected (B, V))`` given the candidates: ``accepted[i] = s_i a(x_i)``, the
        probability that candidate i is selected and accepted, and ``rejected = (sum_i s_i (1 - a(x_i)))
        norm((p - t)+)``, the sub-probability of each token being emitted from the residual."""
        xp = namespace(candidates)
        selected = self._row_selection_probabilities(plan, candidates)
        accepted = selected * gather_rows(plan.accept, candidates)
        rejected = xp.sum(selected, axis=-1) - xp.sum(accepted, axis=-1)
        return accepted, (rejected / plan.residual_sampler.total)[:, None] * plan.residual

    def _row_law(self, plan: Any, candidates: Array) -> tuple[Array, Array]:
        """``(law (B, V), acceptance (B,))`` given the candidates:
        ``law = sum_i s_i [a(x_i) delta(x_i) + (1 - a(x_i)) norm((p - t)+)]``."""
        xp = namespace(candidates)
        accepted, law = self._row_split(plan, candidates)
        for i in range(candidates.shape[1]):  # column by column: a row may repeat a token
            add_at_(law, candidates[:, i:i + 1], accepted[:, i:i + 1])
        return law, xp.sum(accepted, axis=-1)

    # --- the single-instance API: the row methods at B = 1 ------------------------------------------

    def _prepare(self, p: np.ndarray, q: np.ndarray, k: int) -> Any:
        return self._row_plan(p[None], q[None], k)

    def _decide(self, bound: BoundVerifier, candidates: np.ndarray, u: np.ndarray) -> tuple[int, int]:
        tokens, index = self._row_decide(bound.plan, candidates[None], u[None])
        return int(tokens[0]), int(index[0])

    def _law(self, bound: BoundVerifier, candidates: np.ndarray) -> tuple[np.ndarray, float]:
        law, acceptance = self._row_law(bound.plan, candidates[None])
        return law[0], float(acceptance[0])

    def _decide_many(self, bound: BoundVerifier, candidates: np.ndarray,
                     u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All n tuples as rows of one ``_row_decide`` on the bound plan repeated (``in_row_chunks``)."""
        return in_row_chunks(bound, candidates,
                             lambda rows, p, q, plan: self._row_decide(plan, candidates[rows], u[rows]))

    def _laws_many(self, bound: BoundVerifier, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All n conditional laws as rows of one ``_row_law`` (``in_row_chunks``)."""
        return in_row_chunks(bound, candidates, lambda rows, p, q, plan: self._row_law(plan, candidates[rows]))

    def _acceptance(self, bound: BoundVerifier) -> float:
        """Closed form ``sum_y min(p(y), t(y))`` (no tuple enumeration)."""
        return float(np.minimum(bound.p, bound.plan.selection_law[0]).sum())
