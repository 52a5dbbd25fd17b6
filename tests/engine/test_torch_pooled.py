"""The torch pooled port beyond the zoo-wide tests: its plans are NumPy's bit for bit on CPU, its
decisions agree at larger k and on hand-written corner cases, CPU chunking changes nothing, and the
near-tie check of the parity tests sees pooled's thresholds."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.verifiers import get_torch_verifier, pooling
from engine.verifiers.pooling import pooled_plan
from engine.verifiers.validation import as_pair
from resispec.pooling import pooled_plan as numpy_pooled_plan
from resispec.verifiers import get_verifier
from tests.engine.torch_verifier_helpers import near_ties, one_thread, random_batch  # noqa: F401 (fixture)

PLAN_GROUPS = [(2, 2), (5, 3), (16, 1), (16, 4), (16, 8), (300, 5), (2000, 2), (2000, 8)]
"""(V, k) of the plan comparison, 90 nodes each (every corner-case kind 10 times)."""


def pools_with_width(reach: np.ndarray, donor: np.ndarray, receiver: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(kept, donors, receivers, S at their tops, pools before each slot)`` of the slots with width
    (``reach`` = ``cumsum(M)`` over the slots; a pool whose mass rounds away has no width, in both)."""
    kept = np.diff(reach, prepend=0.0) > 0
    return kept, donor[kept], receiver[kept], reach[kept], np.concatenate(([0], np.cumsum(kept)))


def test_plans_are_numpys_bit_for_bit_on_cpu():
    rng = np.random.default_rng(11)
    rows = 0
    for vocab, k in PLAN_GROUPS:
        p64, q64 = as_pair(*random_batch(vocab, 90, rng))
        plan = pooled_plan(p64, q64, k)
        for b in range(p64.shape[0]):
            reference = numpy_pooled_plan(p64[b].numpy(), q64[b].numpy(), k)
            assert int(plan.cut[b]) == reference.cut and np.array_equal(plan.rank[b].numpy(), reference.rank)
            assert np.array_equal(plan.selection_law[b].numpy(), reference.selection_law)
            assert np.array_equal(plan.accept[b].numpy(), reference.accept)
            ours = pools_with_width(plan.pool_reach[b].numpy(), plan.pool_donor[b].numpy(),
                                    plan.pool_receiver[b].numpy())
            theirs = pools_with_width(reference.pool_cumulative[1:], reference.pool_donor, reference.pool_receiver)
            for mine, numpys in zip(ours[1:4], theirs[1:4]):
                assert np.array_equal(mine, numpys), (vocab, k, b)
            # Each rank's pools: the same ones (counted among the pools with width) in both.
            start, stop = (plan.pool_start[b].numpy()[reference.rank], plan.pool_stop[b].numpy()[reference.rank])
            before, count = ours[4][start], ours[4][stop] - ours[4][start]
            numpy_before = theirs[4][reference.pool_start]
            assert np.array_equal(count, theirs[4][reference.pool_stop] - numpy_before)
            assert np.array_equal(before[count > 0], numpy_before[count > 0])
            rows += 1
    assert rows == 90 * len(PLAN_GROUPS)


def corner_pairs() -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Hand-written (name, p, q): the numerical corner cases of docs/pooled.md."""
    uniform = np.full(5, 0.2)
    spread = np.array([0.05, 0.3, 0.15, 0.4, 0.1])
    return [
        ("p == q uniform", uniform, uniform),
        ("p == q", spread, spread),
        ("one-hot p", np.eye(5)[3], spread),
        ("one-hot q", spread, np.eye(5)[1]),
        ("same one-hot", np.eye(5)[2], np.eye(5)[2]),
        ("disjoint", np.array([0.5, 0.5, 0, 0, 0]), np.array([0, 0, 0.2, 0.3, 0.5])),
        ("zeros in both", np.array([0.4, 0, 0.6, 0, 0]), np.array([0, 0.5, 0.25, 0.25, 0])),
        ("ratio ties", np.array([0.1, 0.1, 0.05, 0.05, 0.7]), np.array([0.2, 0.2, 0.1, 0.1, 0.4])),
        ("tiny masses", np.array([1e-12, 0.5 - 1e-12, 0.25, 0.25, 0]), np.array([0.3, 1e-12, 0.4, 0.3 - 1e-12, 0])),
    ]


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
def test_decisions_match_numpy_on_corner_cases(k):
    verifier, reference = get_torch_verifier("pooled"), get_verifier("pooled")
    generator = torch.Generator().manual_seed(k)
    nodes = 300
    for name, p, q in corner_pairs():
        p_batch, q_batch = (torch.tensor(x, dtype=torch.float64).expand(nodes, -1) for x in (p, q))
        candidates = verifier.draft(q_batch, k, generator)
        u = torch.rand((nodes, verifier.uniforms_needed(k)), dtype=torch.float64, generator=generator)
        tokens, index = verifier.verify(p_batch, q_batch, candidates, u)
        decided = list(zip(tokens.tolist(), index.tolist()))
        expected = [reference.verify(p, q, candidates[b].numpy(), u[b].numpy()) for b in range(nodes)]
        assert decided == expected, name
        assert not near_ties(verifier, p_batch, q_batch, candidates, u).any(), name


def test_cpu_chunks_change_no_decision(monkeypatch):
    verifier = get_torch_verifier("pooled")
    generator = torch.Generator().manual_seed(5)
    p, q = random_batch(300, 60, np.random.default_rng(5))
    candidates = verifier.draft(q, 4, generator)
    u = torch.rand((60, verifier.uniforms_needed(4)), dtype=torch.float64, generator=generator)
    decisions = []
    for elements in (1, 7 * 300, 1 << 30):  # one row at a time, uneven chunks (last one short), all rows
        monkeypatch.setattr(pooling, "CPU_CHUNK_ELEMENTS", elements)
        decisions.append([t.tolist() for t in verifier.verify(p, q, candidates, u)])
    assert decisions[0] == decisions[1] == decisions[2]


def test_uniforms_on_a_threshold_are_near_ties():
    """The parity tests' near-tie check fires on pooled's thresholds (else it could not fail)."""
    verifier = get_torch_verifier("pooled")
    p = torch.tensor([[0.05, 0.3, 0.15, 0.4, 0.1]], dtype=torch.float64)
    q = torch.tensor([[0.2, 0.2, 0.2, 0.2, 0.2]], dtype=torch.float64)
    candidates = torch.tensor([[0, 0]])  # token 0 has the lowest ratio: in H*, a receiver, accept < 1
    plan = pooled_plan(*as_pair(p, q), 2)
    own = int(plan.rank[0, 0])
    start, stop = int(plan.pool_start[0, own]), int(plan.pool_stop[0, own])
    assert stop > start  # token 0 (the lowest ratio) receives from a pool
    u = torch.tensor([[0.37, 0.58, 0.3, 0.6, 0.41, 0.73]], dtype=torch.float64)
    assert not near_ties(verifier, p, q, candidates, u).any()
    on_boundary = u.clone()
    on_boundary[0, 0] = float(plan.pool_reach[0, start]) / 0.2  # (S_{a+1} - S_a) / q_x with S_a = 0
    assert start == 0 and near_ties(verifier, p, q, candidates, on_boundary).all()
    on_accept = u.clone()
    on_accept[0, 4] = float(plan.accept[0, 0])
    assert float(plan.accept[0, 0]) < 1 and near_ties(verifier, p, q, candidates, on_accept).all()
