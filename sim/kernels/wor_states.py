"""The states of the sequential WOR verifiers (rrs_wor, resispec_wor) after a rejected prefix.

A state after the rejected candidates ``h = (x_1..x_{i-1})`` holds the target ``r_h`` and the undrawn
draft weights (q with h zeroed); candidate ``x_i`` is drawn from the proposal ``s_h = norm(undrawn)``
and accepted with probability ``a_h(x)``. What the simulator reads off a state:

- ``acceptance(x)``: ``a_h(x)``, by the core's step rule;
- ``accepted_mass``: the vector ``s_h(x) a_h(x)`` (its sum is the probability of accepting at this
  step given it is reached), and the rejection masses ``s_h - accepted_mass``;
- ``tv``: ``TV(r_h, s_h)``;
- ``after_rejecting(x, left)``: the state after h x, with ``left`` candidates still to come.

rrs_wor: ``a_h(x) = min(1, r_h(x) / s_h(x))``, next target ``norm((r_h - s_h)+)`` (the core's
``rejection_step``), accepted mass ``min(r_h, s_h)``. resispec_wor with n >= 2 candidates left: the k = 2
latest-first plan of ``(r_h, s_h)`` (``resispec.verifiers.resispec_wor.plan``, one row), ``a_h(x) = A(x) /
s_h(x)`` (``first_acceptance``), accepted mass A, next target ``plan.rejection_target(x)``; with one left,
the rrs_wor step. ``accepted_mass`` leaves out ``first_acceptance``'s rounding guard (it accepts x outright
when rejecting it would leave no mass; then ``s_h(x) - A(x)`` is rounding only); the path estimator
(``resispec.sim.kernels.paths``) ends a path that draws such a candidate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from resispec.verifiers.rejection import rejection_acceptance, rejection_residual
from resispec.verifiers.resispec_wor.plan import LatestFirstPlan, latest_first_plan


@dataclass(frozen=True)
class RrsWorState:
    """rrs_wor after a rejected prefix (module docstring); ``plan`` is the k = 2 plan of a subclass
    that shapes its residuals (None: the rrs_wor step)."""

    target: np.ndarray
    undrawn: np.ndarray
    proposal: np.ndarray
    tv: float
    plan: LatestFirstPlan | None = None

    @classmethod
    def of(cls, target: np.ndarray, undrawn: np.ndarray, left: int) -> RrsWorState:
        """The state with this target and undrawn draft weights, ``left`` candidates to come."""
        proposal = undrawn / undrawn.sum()
        return cls(target, undrawn, proposal, float(0.5 * np.abs(target - proposal).sum()),
                   cls.plan_for(target, undrawn, left))

    @staticmethod
    def plan_for(target: np.ndarray, undrawn: np.ndarray, left: int) -> LatestFirstPlan | None:
        return None

    @property
    def accepted_mass(self) -> np.ndarray:
        return np.minimum(self.target, self.proposal) if self.plan is None else self.plan.accepted[0]

    def acceptance(self, candidate: int) -> float:
        if self.plan is None:
            return float(rejection_acceptance(self.target, self.proposal, candidate))
        return float(self.plan.first_acceptance(np.array([candidate]))[0])

    def after_rejecting(self, candidate: int, left: int) -> RrsWorState:
        if self.plan is None:
            target = rejection_residual(self.target, self.proposal)
        else:
            target = self.plan.rejection_target(np.array([candidate]))[0]
        undrawn = self.undrawn.copy()
        undrawn[candidate] = 0.0
        return type(self).of(target, undrawn, left)


class ResispecWorState(RrsWorState):
    """resispec_wor after a rejected prefix: the k = 2 plan of the state while two or more candidates
    are left, the rrs_wor step for the last one."""

    @staticmethod
    def plan_for(target: np.ndarray, undrawn: np.ndarray, left: int) -> LatestFirstPlan | None:
        return latest_first_plan(target[None], undrawn[None]) if left >= 2 else None


WOR_STATES = {"rrs_wor": RrsWorState, "resispec_wor": ResispecWorState}
"""The state class of each sequential WOR verifier."""
