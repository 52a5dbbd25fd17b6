"""round_lp_wor: the round LP's optimal plan as a verifier, the optimum of its tree law reached (small V only).

An optimal plan of the round LP (``resispec.sequence.round_lp``) is ``x[t, n, y] >= 0`` with
``sum_(n, y) x[t, n, y] = P(t)`` per drafted tree t and ``sum_(t, n, y) x[t, n, y] T(s | path(n) y) = T(s)`` for
every sequence s. The verifier looks the drafted tree up and draws the outcome from the plan *conditioned on
it*: ``P(n, y | t) = x[t, n, y] / P(t)``. Exact by construction (theorem ``round_lp.exact``): the round's
sequence law is ``sum_t P(t) sum_(n, y) P(n, y | t) T(s | path(n) y)``, the LP's marginal constraint, ``T(s)``;
and its expected accepted draft tokens are the LP's optimum, the best any exact verifier reaches on that tree
law (``RoundLaw.stop[n] = sum_y x[t, n, y] / P(t)``, ``emission[n] = x[t, n] / sum_y x[t, n, y]``).

It is a *reference*, not a decoder: the plan needs the target's and the draft's laws at every prefix of every
drafted tree (the models, not the round's rows), and the LP has ``trees x N x V`` columns; the plan is solved
once per model pair (``RoundLPWOR.solve``) and then answers any drafted tree of that law. Usable where the LP
is: V <= 3-4, trees of 2-3 paths of depth <= 3 (``round_lp`` module doc).

Uniform layout (``uniforms_needed = 1``): ``u[0]`` draws the flat index ``n V + y`` of ``P(n, y | t)`` by
inverse CDF.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from resispec.sampling import inverse_cdf
from resispec.sequence.base import RoundVerifier
from resispec.sequence.enumeration import Conditional
from resispec.sequence.round_lp import RoundPlan, solve_round_lp
from resispec.sequence.tree import RoundLaw, RoundTree


class RoundLPWOR(RoundVerifier):
    """The round LP's optimal plan, conditioned on the drafted tree, siblings drafted without replacement
    (module doc). Exact; reaches the LP optimum of its tree law."""

    name = "round_lp_wor"
    drafting = "wor"
    claims_exact = True
    plan_drafting: ClassVar[str] = "wor"
    """The drafting law the plan was solved for (``drafting`` for an exact verifier)."""

    def __init__(self, plan: RoundPlan) -> None:
        if plan.drafting != self.plan_drafting:
            raise ValueError(f"plan: {self.name} takes a plan of {self.plan_drafting} drafting, got {plan.drafting}")
        self.plan = plan
        self._index = {self._key(d.tree): t for t, d in enumerate(plan.rounds)}

    @classmethod
    def solve(cls, target: Conditional, draft: Conditional, vocab_size: int, branching: Sequence[int],
              max_trees: int = 5_000) -> RoundLPWOR:
        """The verifier of the LP's optimal plan for these models and tree shape."""
        return cls(solve_round_lp(target, draft, vocab_size, branching, cls.plan_drafting, max_trees))

    @staticmethod
    def _key(tree: RoundTree) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return tuple(tree.parents.tolist()), tuple(tree.tokens.tolist())

    def uniforms_needed(self, tree: RoundTree) -> int:
        return 1

    def conditional(self, tree: RoundTree, p: np.ndarray) -> np.ndarray:
        """``P(n, y | tree)`` (shape (N, V)); ``ValueError`` for a tree or rows the plan was not solved for."""
        t = self._index.get(self._key(tree))
        if t is None:
            raise ValueError(f"tree: {self.name}'s plan has no drafted tree with tokens {tree.tokens.tolist()} "
                             "(another shape, or a tree its drafting law never draws)")
        drafted = self.plan.rounds[t]
        if p.shape != drafted.p.shape or not np.allclose(p, drafted.p, rtol=0.0, atol=1e-12):
            raise ValueError("p (target): not the target rows the plan was solved for (another model pair)")
        return self.plan.plans[t] / drafted.probability

    def _decide(self, tree: RoundTree, p: np.ndarray, q: np.ndarray, u: np.ndarray) -> tuple[int, int]:
        joint = self.conditional(tree, p)
        node, token = divmod(int(inverse_cdf(joint.ravel(), u[0])), joint.shape[1])
        return node, token

    def _law(self, tree: RoundTree, p: np.ndarray, q: np.ndarray) -> RoundLaw:
        joint = self.conditional(tree, p)
        stop = joint.sum(axis=1)
        emission = p.copy()
        emission[stop > 0] = joint[stop > 0] / stop[stop > 0, None]
        return RoundLaw(stop=stop, emission=emission)


class RoundLPIIDPlanOnWOR(RoundLPWOR):
    """Control (biased): the plan solved for *i.i.d.* drafting, conditioned on a tree drafted without
    replacement. Each conditional is a law, but the trees arrive with the WOR probabilities, not the ones
    the plan's marginal constraint was written with, so the mixture over trees is not the target's."""

    name = "round_lp_iid_plan_on_wor"
    claims_exact = False
    plan_drafting = "iid"
