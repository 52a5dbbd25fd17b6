"""The engine's batched decision loop and a rule written once over rows: resispec_wor builds its later plans
for the undecided nodes only (the loop tells the rule which nodes are still undecided)."""

from __future__ import annotations

import numpy as np
import torch

from resispec.engine.verifiers import get_torch_verifier
from resispec.verifiers.resispec_wor import rule as resispec_wor
from resispec.verifiers.resispec_wor.plan import LatestFirstPlan, latest_first_plan
from tests.engine.torch_verifier_helpers import one_thread, random_batch  # noqa: F401 (fixture)


def test_later_plans_are_built_for_the_undecided_nodes_only(monkeypatch):
    built = []

    def recording_plan(target: torch.Tensor, undrawn: torch.Tensor) -> LatestFirstPlan:
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
