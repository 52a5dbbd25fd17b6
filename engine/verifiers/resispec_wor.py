"""Torch port of ``resispec.verifiers.resispec_wor.ResiSpecWithoutReplacement``: latest-first residual
shaping over WOR candidates, batched.

Per node the state ``(r, q', n)``: target, undrawn draft weights, candidates left (``r = p``,
``q' = q``, ``n = k`` at the start). With ``n >= 2`` the node's k = 2 latest-first plan for
``(r, norm(q'))`` (``engine.verifiers.wor_shaping``) accepts the candidate x with probability
``A_x / q'_x``; on rejection the next state is ``(r_x, q'_{-x}, n - 1)``, ``r_x`` the law the plan
emits once x is rejected. With ``n = 1``: the rrs_wor step (accept ``min(1, r_x / q'_x)``, else emit
from ``norm((r - q')+)``). Exact, by induction on n (the NumPy module's argument).

Batching. The first plan (every node) is ``_prepare``'s; a later step's plan is built only for the
nodes still undecided, as the decision loop reports them (``TorchStepGenerator``), less those whose
step accepts with certainty (``a = 1``): the state, plan and candidates are cut down to those rows
(one host sync per step), and the yielded ``a_i`` and the final residual are scattered back to all B
rows (decided rows: ``a = 1`` and an empty residual, never used). Shapes: p, q (B, V); candidates
(B, k), distinct within a row. Cost: 1 to k - 1 plans per node (two ratio sorts each), like NumPy.
"""

from __future__ import annotations

import torch

from engine.verifiers.base import SequentialTorchVerifier, TorchStepGenerator
from engine.verifiers.validation import row_sums
from engine.verifiers.wor_shaping import TorchLatestFirstPlan, latest_first_plan
from resispec.verifiers.rejection import rejection_step
from resispec.verifiers.resispec_wor import ResiSpecWithoutReplacement


class TorchResiSpecWithoutReplacement(SequentialTorchVerifier):
    """Latest-first residual shaping over WOR draws, re-planning k = 2 at every step, all nodes at once. Exact."""

    numpy_twin = ResiSpecWithoutReplacement

    def _prepare(self, p: torch.Tensor, q: torch.Tensor, k: int) -> TorchLatestFirstPlan | None:
        """Every node's first plan; None for k = 1 (a plain rrs_wor step)."""
        return latest_first_plan(p, q) if k >= 2 else None

    def _steps(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor,
               plan: TorchLatestFirstPlan | None) -> TorchStepGenerator:
        batch, k = candidates.shape
        rows = torch.arange(batch, device=p.device)  # the nodes whose state is carried, in order
        target, undrawn = p, q
        for i in range(k):
            candidate = candidates[rows, i]
            if i == k - 1:
                acceptance, target = rejection_step(target, undrawn / row_sums(undrawn), candidate)
                yield _scatter(acceptance, rows, batch, 1.0)
                return _scatter(target, rows, batch, 0.0)
            acceptance = plan.first_acceptance(candidate)
            undecided = yield _scatter(acceptance, rows, batch, 1.0)
            carry = acceptance < 1.0
            if undecided is not None:
                carry &= undecided[rows]
            kept = torch.nonzero(carry)[:, 0]
            if kept.numel() == 0:  # every node decided: a = 1 for the steps left, no residual
                for _ in range(k - 1 - i):
                    yield p.new_ones(batch)
                return torch.zeros_like(p)
            rows, plan, candidate, undrawn = rows[kept], plan.rows(kept), candidate[kept], undrawn[kept]
            target = plan.rejection_target(candidate)
            undrawn = undrawn.scatter(1, candidate[:, None], 0.0)
            if i < k - 2:
                plan = latest_first_plan(target, undrawn)


def _scatter(values: torch.Tensor, rows: torch.Tensor, batch: int, fill: float) -> torch.Tensor:
    """``values`` (B', ...) of the nodes ``rows`` placed in a (B, ...) tensor, ``fill`` elsewhere."""
    return values.new_full((batch, *values.shape[1:]), fill).index_copy_(0, rows, values)

