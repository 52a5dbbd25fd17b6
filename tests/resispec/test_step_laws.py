"""``enumerate_steps``: a sequential verifier's exact law split by the emitting step; the residual after
i - 1 rejections is rrs's residual chain and resispec's shaped residual."""

from __future__ import annotations

import numpy as np
import pytest

from resispec import VERIFIERS, get_verifier
from resispec.enumeration import enumerate_law, enumerate_steps
from resispec.verifiers import SequentialVerifier
from resispec.verifiers.resispec.plan import schedule

RNG = np.random.default_rng(7)
P, Q = RNG.dirichlet(np.full(5, 0.6)), RNG.dirichlet(np.full(5, 0.6))
SEQUENTIAL = [name for name, cls in VERIFIERS.items() if issubclass(cls, SequentialVerifier) and cls.max_k is None]


@pytest.mark.parametrize("name", SEQUENTIAL)
def test_the_steps_add_up_to_the_enumerated_law_and_acceptance(name):
    bound = get_verifier(name).bind(P, Q, 3)
    steps, whole = enumerate_steps(bound), enumerate_law(bound)
    np.testing.assert_allclose(steps.law, whole.law, atol=1e-15)
    assert steps.accepted.sum() == pytest.approx(whole.acceptance, abs=1e-15)
    assert steps.reached[0] == pytest.approx(1.0, abs=1e-15) and np.all(np.diff(steps.reached) <= 1e-15)
    np.testing.assert_allclose(steps.residual(1), whole.law, atol=1e-15)  # nothing rejected yet


def test_rrs_residual_after_each_rejection_is_the_normalised_excess():
    steps = enumerate_steps(get_verifier("rrs").bind(P, Q, 3))
    target = P
    for step in range(1, 5):
        np.testing.assert_allclose(steps.residual(step), target, atol=1e-12)
        excess = np.maximum(target - Q, 0.0)
        target = excess / excess.sum()


def test_resispec_residual_is_the_shaped_residual_of_its_schedule():
    steps = enumerate_steps(get_verifier("resispec").bind(P, Q, 3))
    plan = schedule(P, Q, 3)
    for j in range(3):
        shaped = np.maximum(P - plan.T[0] * Q, 0.0) + np.minimum(P, plan.T[j] * Q)
        np.testing.assert_allclose(steps.residual(j + 1), shaped / plan.R[j], atol=1e-12)
        assert steps.reached[j] == pytest.approx(plan.R[j], abs=1e-12)


def test_the_biased_control_owes_something_else_than_p():
    steps = enumerate_steps(get_verifier("resispec_paper").bind([0.4, 0.3, 0.3], [0.6, 0.3, 0.1], 1))
    np.testing.assert_allclose(steps.law, [0.4, 0.48, 0.12], atol=1e-12)


def test_refusals_name_the_problem():
    with pytest.raises(ValueError, match="pooled is not sequential"):
        enumerate_steps(get_verifier("pooled").bind(P, Q, 2))
    with pytest.raises(ValueError, match="max_tuples"):
        enumerate_steps(get_verifier("rrs").bind(P, Q, 3), max_tuples=10)
    with pytest.raises(ValueError, match="step: expected 1..4"):
        enumerate_steps(get_verifier("rrs").bind(P, Q, 3)).residual(5)
