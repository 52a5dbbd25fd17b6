"""round_lp_wor, the round LP's optimal plan sampled conditioned on the drafted tree
(resispec/sequence/round_lp_verifier.py): exact law to 1e-12 on the small root-WOR trees, the LP's optimum
reached (above every exact rule of the zoo), sampling against the law and the sequence law, the control
caught, and clear errors for trees or models the plan was not solved for."""

from __future__ import annotations

import numpy as np
import pytest

from resispec.audit.goodness_of_fit import merged_chi_square
from resispec.audit.round_law import exact_round_law
from resispec.audit.round_sampling import round_sampling_audit
from resispec.drafting import DRAFTING_SCHEMES
from resispec.sequence.enumeration import RoundModels, dirichlet_conditional
from resispec.sequence.round_lp import solve_round_lp
from resispec.sequence.round_lp_verifier import RoundLPIIDPlanOnWOR, RoundLPWOR
from resispec.sequence.tree import round_tree


def instance(seed: int, branching: tuple[int, ...]):
    return dirichlet_conditional(3, 2 * seed), dirichlet_conditional(3, 2 * seed + 1), 3, branching


@pytest.mark.parametrize("branching", [(2, 1), (3, 1), (2, 1, 1)])
@pytest.mark.parametrize("seed", [300, 301, 302])
def test_the_plan_is_exact_and_reaches_the_optimum(branching, seed):
    models = instance(seed, branching)
    verifier = RoundLPWOR.solve(*models)
    result = exact_round_law(verifier, *models)
    assert result.exact, result.max_error
    assert result.expected_accepted == pytest.approx(verifier.plan.value, abs=1e-12)
    for name in ("traversal_wor", "traversal_resispec_wor"):
        assert exact_round_law(name, *models).expected_accepted <= result.expected_accepted + 1e-9


def test_the_plan_reproduces_the_pinned_gap_on_two_wor_paths_of_three():
    models = instance(301, (2, 1, 1))
    best = exact_round_law("traversal_resispec_wor", *models).expected_accepted
    assert exact_round_law(RoundLPWOR.solve(*models), *models).expected_accepted - best == pytest.approx(0.1521,
                                                                                                       abs=1e-4)


@pytest.mark.parametrize("seed", [300, 301])
def test_the_control_is_caught(seed):
    models = instance(seed, (2, 1))
    assert exact_round_law(RoundLPIIDPlanOnWOR.solve(*models), *models).max_error > 1e-3


def test_sampled_decisions_follow_the_conditional_law():
    models = instance(300, (2, 1))
    verifier = RoundLPWOR.solve(*models)
    drafted = max(verifier.plan.rounds, key=lambda d: d.probability)
    law = verifier.law(drafted.tree, drafted.p, drafted.q).joint
    assert law.sum() == pytest.approx(1.0, abs=1e-12)
    rng = np.random.default_rng(4)
    counts = np.zeros(law.size, dtype=np.int64)
    for _ in range(3000):
        node, token = verifier.verify(drafted.tree, drafted.p, drafted.q, rng.random(1))
        counts[node * 3 + token] += 1
    assert merged_chi_square(counts, law.ravel()).pvalue > 1e-3


def test_the_sampling_audit_passes_the_plan_and_fails_the_control():
    models = instance(301, (2, 1))
    assert all(r.passed for r in round_sampling_audit(RoundLPWOR.solve(*models), *models, samples=3000, seed=2))
    assert not any(r.passed for r in round_sampling_audit(RoundLPIIDPlanOnWOR.solve(*models), *models,
                                                          samples=3000, seed=2))


def test_trees_and_models_outside_the_plan_are_refused():
    models = instance(300, (2, 1))
    verifier = RoundLPWOR.solve(*models)
    drafted = verifier.plan.rounds[0]
    chain = round_tree([-1, 0], [0, 1], 3)
    with pytest.raises(ValueError, match="has no drafted tree"):
        verifier.law(chain, drafted.p[:2], drafted.q[:1])
    with pytest.raises(ValueError, match="not the target rows"):
        verifier.law(drafted.tree, drafted.p[:, ::-1], drafted.q)
    with pytest.raises(ValueError, match="takes a plan of wor drafting"):
        RoundLPWOR(solve_round_lp(*models, drafting="iid"))


def test_a_plan_is_one_feasible_joint_per_tree():
    models = instance(302, (2, 1))
    plan = solve_round_lp(*models, drafting="wor")
    assert len(plan.rounds) == sum(1 for _ in RoundModels(*models).rounds(DRAFTING_SCHEMES["wor"]))
    for drafted, joint in zip(plan.rounds, plan.plans):
        assert joint.min() >= 0.0 and joint.sum() == pytest.approx(drafted.probability, abs=1e-14)
