"""The engine agrees with the NumPy core where the two have separate code: the registry (every verifier of
the zoo runs its core rule on tensors through one adapter, ``resispec.engine.verifiers.base.TorchVerifier``), the
batched
inverse CDF (overshoot and empty rows), top-k ties, and the residual fallback of the decision loop.

The engine's decisions are checked against
recorded tokens (``test_decoded_tokens.py``) and the exact law (``test_torch_verifiers_exactness.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from resispec.drafting import top_k_tokens as numpy_top_k_tokens
from resispec.engine.verifiers import TorchVerifier, get_torch_verifier
from resispec.engine.verifiers.base import CPU_ROWS
from resispec.engine.verifiers.drafting import top_k_tokens
from resispec.rows import namespace
from resispec.sampling import inverse_cdf as numpy_inverse_cdf
from resispec.sampling import inverse_cdf_rows
from resispec.verifiers import VERIFIERS, SequentialVerifier
from resispec.verifiers.base import BatchedSequentialVerifier
from tests.engine.torch_verifier_helpers import DEVICES, one_thread, random_batch  # noqa: F401 (fixture)


def test_every_verifier_of_the_zoo_runs_through_the_one_adapter():
    for name, cls in VERIFIERS.items():  # every verifier of the zoo runs in the engine: its core rule itself
        verifier = get_torch_verifier(name)
        assert type(verifier) is TorchVerifier and type(verifier.rule) is cls
        attributes = ("name", "drafting", "claims_exact", "max_k")
        assert [getattr(verifier, a) for a in attributes] == [getattr(cls, a) for a in attributes]
        assert verifier.uniforms_needed(3) == cls().uniforms_needed(3)
    with pytest.raises(ValueError, match="unknown verifier 'nope'; known: sps, rrs"):
        get_torch_verifier("nope")
    with pytest.raises(ValueError, match="rule: _StubNumPy is not written over rows"):
        TorchVerifier(_StubNumPy())


@pytest.mark.parametrize("name", VERIFIERS)
def test_cpu_rows_as_numpy_views_or_as_tensors_make_the_same_decisions(name):
    """The default CPU path hands the rule NumPy views; ``cpu_rows="torch"`` the tensors (the CUDA path's
    code): every node kind, the same uniforms, the same decisions."""
    rule = VERIFIERS[name]()
    seen = []
    row_plan = rule._row_plan
    rule._row_plan = lambda p, q, k: seen.append(type(p)) or row_plan(p, q, k)
    views, tensors = TorchVerifier(rule), TorchVerifier(rule, cpu_rows="torch")
    p, q = random_batch(10, 36, np.random.default_rng(1711), min_support=3)
    k = 1 if rule.max_k == 1 else 3
    generator = torch.Generator().manual_seed(1712)
    candidates = views.draft(q, k, generator)
    u = torch.rand((len(p), views.uniforms_needed(k)), dtype=torch.float64, generator=generator)
    tokens, index = views.verify(p, q, candidates, u)
    expected_tokens, expected_index = tensors.verify(p, q, candidates, u)
    assert seen == [np.ndarray, torch.Tensor]
    assert tokens.dtype == index.dtype == torch.long and torch.equal(tokens, expected_tokens)
    assert torch.equal(index, expected_index) and (index >= 0).any() and (index < 0).any()
    with pytest.raises(ValueError, match="cpu_rows: expected one of numpy, torch, got 'cuda'"):
        TorchVerifier(rule, cpu_rows="cuda")


@pytest.mark.parametrize("device", DEVICES)
def test_inverse_cdf_matches_numpy_including_overshoot(device):
    rng = np.random.default_rng(3)
    weights = rng.random((64, 3000)) * (rng.random((64, 3000)) < 0.5)
    weights[:, -100:] = 0.0  # trailing zeros: an overshoot must land on the last positive weight
    u = rng.random((64, 5))
    u[:, 0] = np.nextafter(1.0, 0.0)
    drawn = inverse_cdf_rows(torch.tensor(weights, device=device), torch.tensor(u, device=device)).cpu().numpy()
    for b in range(64):
        assert drawn[b].tolist() == [numpy_inverse_cdf(weights[b], float(x)) for x in u[b]]
        assert drawn[b, 0] == np.flatnonzero(weights[b])[-1]
    zeros = torch.zeros(2, 4, dtype=torch.float64, device=device)
    empty = inverse_cdf_rows(zeros, zeros[:, 0])
    assert empty.tolist() == [-1, -1]


@pytest.mark.parametrize("device", DEVICES)
def test_top_k_tokens_break_ties_by_token_id_like_numpy(device):
    rng = np.random.default_rng(4)
    q = rng.integers(0, 4, size=(200, 12)).astype(np.float64)  # many exact ties, some zeros
    q[:, 0] += 0.5
    for k in (1, 3, 7):
        tokens = top_k_tokens(torch.tensor(q, device=device), k).cpu().numpy()
        assert all(tokens[b].tolist() == numpy_top_k_tokens(q[b], k).tolist() for b in range(200))


class _StubNumPy(SequentialVerifier):
    """Rejects every candidate and leaves a residual with mass only where p = 0: p must be drawn from."""

    name, drafting, claims_exact = "stub", "iid", False

    def _steps(self, bound, candidates):
        for _ in candidates:
            yield 0.0
        return np.where(bound.p > 0, 0.0, 1.0)


class _StubRows(BatchedSequentialVerifier):
    """The same stub written over rows (NumPy or torch), which the adapter runs."""

    name, drafting, claims_exact = "stub", "iid", False

    def _row_steps(self, p, q, candidates, plan):
        xp = namespace(p)
        for _ in range(candidates.shape[1]):
            yield xp.zeros(p.shape[:1], dtype=p.dtype)
        return xp.where(p > 0, 0.0, 1.0)


def test_a_final_residual_without_mass_on_the_support_of_p_draws_from_p_in_both():
    p = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    candidates = torch.tensor([[0, 1], [2, 2]])
    u = torch.tensor([[0.1, 0.2, 0.3], [0.0, 0.9, 0.99]], dtype=torch.float64)
    for cpu_rows in CPU_ROWS:
        tokens, index = TorchVerifier(_StubRows(), cpu_rows).verify(p, p, candidates, u)
        assert tokens.tolist() == [0, 2] and index.tolist() == [-1, -1]
    expected = [_StubNumPy().verify(p[b].double().numpy(), p[b].double().numpy(), candidates[b].numpy(), u[b].numpy())
                for b in range(2)]
    assert expected == [(0, -1), (2, -1)]
    law = _StubNumPy().conditional_law(p[0].double().numpy(), p[0].double().numpy(), [0, 1])
    assert law.tolist() == [0.5, 0.5, 0.0]


@pytest.mark.parametrize("device", DEVICES)
def test_pooled_wor_rows_with_and_without_mixtures_decide_as_numpy(device):
    """A batch mixing rows whose plans carry mixtures with a row that scans alone (padded with weight 0):
    the torch decisions equal the NumPy single-instance ones, row for row."""
    from tests.resispec.verifiers.test_pooled_wor import SHORT_SCANS
    rng, per_pair, k = np.random.default_rng(1710), 60, 2
    pairs = [(np.array(p), np.array(q)) for _, p, q in (SHORT_SCANS[0], SHORT_SCANS[3])]
    pairs.append((rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))))
    numpy_rule, verifier = VERIFIERS["pooled_wor"](), get_torch_verifier("pooled_wor")
    columns = [numpy_rule.bind(p, q, k).plan.column_weights.shape[1] for p, q in pairs]
    assert columns[0] > 0 and columns[1] > 0 and columns[2] == 0, columns  # the third row padded with weight 0
    p, q = (np.tile(np.stack([pair[i] for pair in pairs]), (per_pair, 1)) for i in (0, 1))
    generator = torch.Generator(device).manual_seed(1710)
    candidates = verifier.draft(torch.tensor(q, device=device), k, generator)
    u = torch.rand((len(p), verifier.uniforms_needed(k)), dtype=torch.float64, device=device, generator=generator)
    tokens, index = verifier.verify(torch.tensor(p, device=device), torch.tensor(q, device=device), candidates, u)
    for b in range(len(p)):
        expected = numpy_rule.verify(p[b], q[b], candidates[b].cpu().numpy(), u[b].cpu().numpy())
        assert (int(tokens[b]), int(index[b])) == expected, b
