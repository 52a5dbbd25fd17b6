"""The torch resispec_wor port beyond the zoo-wide tests: its latest-first plans are NumPy's bit for bit
on CPU (first plans and the plans after a rejection), its decisions agree on the NumPy module's float64
corner cases (subnormal q, q near one-hot, 1 - q subnormal, ...), a stranded rejection is overturned as
in NumPy, and later plans are built for the undecided nodes only."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from engine.verifiers import get_torch_verifier, resispec_wor
from engine.verifiers.validation import as_pair
from engine.verifiers.wor_shaping import TorchLatestFirstPlan, latest_first_plan
from resispec.verifiers import get_verifier
from resispec.wor_shaping import latest_first_plan as numpy_latest_first_plan
from tests.engine.torch_verifier_helpers import near_ties, one_thread, random_batch  # noqa: F401 (fixture)
from tests.test_resispec_wor import CORNER_CASES

PLAN_VOCABS = (3, 5, 16, 300, 2000)
"""V of the plan comparison, 90 nodes each (every corner-case kind of ``random_batch`` 10 times)."""
FIELDS = ("draft", "accepted", "reach", "second", "residual")


def assert_plans_equal(plan: TorchLatestFirstPlan, target: torch.Tensor, undrawn: torch.Tensor,
                       candidate: torch.Tensor) -> None:
    """Every row of ``plan`` is NumPy's plan of that row bit for bit, with its S, the first
    candidate's acceptance and, where a rejection is possible, the law after rejecting it."""
    after = plan.rejection_target(candidate)
    first = plan.first_acceptance(candidate)
    for b in range(target.shape[0]):
        reference = numpy_latest_first_plan(target[b].numpy(), undrawn[b].numpy())
        x = int(candidate[b])
        for name in FIELDS:
            assert np.array_equal(getattr(plan, name)[b].numpy(), getattr(reference, name)), (b, name)
        assert float(plan.total[b]) == reference.total, b
        assert float(first[b]) == reference.first_acceptance(x), b
        if first[b] < 1:
            assert np.array_equal(after[b].numpy(), reference.rejection_target(x)), b


def test_plans_are_numpys_bit_for_bit_on_cpu():
    rng = np.random.default_rng(12)
    generator = torch.Generator().manual_seed(12)
    second_plans = 0
    for vocab in PLAN_VOCABS:
        p, q = as_pair(*random_batch(vocab, 90, rng, min_support=3))
        candidate = torch.multinomial(q, 1, generator=generator)[:, 0]
        plan = latest_first_plan(p, q)
        assert_plans_equal(plan, p, q, candidate)
        # Where the candidate can be rejected: the next step's state (many exact ratio ties there).
        target, undrawn = plan.rejection_target(candidate), q.scatter(1, candidate[:, None], 0.0)
        reached = (plan.first_acceptance(candidate) < 1) & ((undrawn > 0).sum(dim=-1) >= 2)
        rows = torch.nonzero(reached)[:, 0]
        target, undrawn = target[rows], undrawn[rows]
        assert_plans_equal(latest_first_plan(target, undrawn), target, undrawn,
                           torch.multinomial(undrawn, 1, generator=generator)[:, 0])
        second_plans += rows.numel()
    assert second_plans >= 0.5 * 90 * len(PLAN_VOCABS)


@pytest.mark.parametrize("name, p, q", CORNER_CASES)
def test_decisions_match_numpy_on_float64_corner_cases(name, p, q):
    verifier, reference = get_torch_verifier("resispec_wor"), get_verifier("resispec_wor")
    p, q = np.array(p) / np.sum(p), np.array(q) / np.sum(q)
    generator = torch.Generator().manual_seed(len(name))
    nodes = 300
    p_batch, q_batch = (torch.tensor(x, dtype=torch.float64).expand(nodes, -1) for x in (p, q))
    if np.count_nonzero(q) >= 2:
        target, draft = as_pair(p_batch[:1], q_batch[:1])
        assert_plans_equal(latest_first_plan(target, draft), target, draft, torch.tensor([int(np.argmax(q))]))
    for k in range(1, min(4, np.count_nonzero(q)) + 1):
        candidates = verifier.draft(q_batch, k, generator)
        u = torch.rand((nodes, k + 1), dtype=torch.float64, generator=generator)
        tokens, index = verifier.verify(p_batch, q_batch, candidates, u)
        expected = [reference.verify(p, q, candidates[b].numpy(), u[b].numpy()) for b in range(nodes)]
        assert list(zip(tokens.tolist(), index.tolist())) == expected, (name, k)
        assert not near_ties(verifier, p_batch, q_batch, candidates, u).any(), (name, k)


def test_a_stranded_rejection_is_overturned():
    """Rounding can leave A_x a hair below q_x while rejecting x leads nowhere (no residual, no other
    token step 2 would accept): step 1 then accepts x, as NumPy's ``first_acceptance`` does."""
    p = torch.tensor([[0.5, 0.5, 0.0]], dtype=torch.float64)
    exact = latest_first_plan(p, p)
    zeros = torch.zeros_like(p)
    nudged = dataclasses.replace(exact, accepted=torch.tensor([[0.5 - 1e-16, 0.0, 0.0]], dtype=torch.float64),
                                 second=zeros, residual=zeros)
    candidate = torch.tensor([0])
    assert nudged.first_acceptance(candidate).tolist() == [1.0]
    reachable = dataclasses.replace(nudged, second=torch.tensor([[0.0, 1.0, 0.0]], dtype=torch.float64))
    assert reachable.first_acceptance(candidate).item() < 1.0
    assert exact.first_acceptance(candidate).tolist() == [1.0]


def test_later_plans_are_built_for_the_undecided_nodes_only(monkeypatch):
    built = []

    def recording_plan(target: torch.Tensor, undrawn: torch.Tensor) -> TorchLatestFirstPlan:
        built.append(target.shape[0])
        return latest_first_plan(target, undrawn)

    monkeypatch.setattr(resispec_wor, "latest_first_plan", recording_plan)
    verifier, k, nodes = get_torch_verifier("resispec_wor"), 5, 400
    generator = torch.Generator().manual_seed(3)
    p, q = random_batch(50, nodes, np.random.default_rng(3), min_support=k)
    candidates = verifier.draft(q, k, generator)
    u = torch.rand((nodes, k + 1), dtype=torch.float64, generator=generator)
    _, index = verifier.verify(p, q, candidates, u)
    # The first plan (every node), then one per step i = 0..k - 3 for the nodes that rejected
    # candidates 0..i: their final index is -1 (the residual) or past i.
    undecided = [int(((index == -1) | (index > i)).sum()) for i in range(k - 2)]
    assert built == [nodes, *undecided]
    assert nodes > undecided[0] > undecided[-1] > 0
