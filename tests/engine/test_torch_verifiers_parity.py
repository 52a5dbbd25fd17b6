"""Decision-for-decision parity of the torch ports with their NumPy twins, given the same uniforms.

Only the verifiers that still have a torch port (resispec, resispec_wor) have a twin to agree with; the
others run the core's own rule on tensors (``engine.verifiers.shared_rule``).

Thousands of seeded random nodes per verifier, corner cases included (p == q, one-hot p and q, zeros
in p and q, masses of 1e-12, disjoint supports, ratio ties, peaky LLM-like pairs), float32
probabilities, each verifier's own uniform count. The NumPy reference verifies each
node on the float32 values cast to float64. Only summation order differs between the two, so a
disagreement is allowed only where a uniform lies within 1e-12 of its threshold (a genuine rounding
tie: an acceptance probability or a residual boundary);
such near ties are counted and are 0 here.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

from engine.verifiers import TORCH_VERIFIERS, SequentialTorchVerifier, get_torch_verifier
from engine.verifiers.drafting import top_k_tokens
from engine.verifiers.sampling import inverse_cdf
from engine.verifiers.shared_rule import SharedRuleTorchVerifier, SharedSelectionTorchVerifier
from resispec.drafting import top_k_tokens as numpy_top_k_tokens
from resispec.sampling import inverse_cdf as numpy_inverse_cdf
from resispec.verifiers import VERIFIERS, SequentialVerifier, get_verifier
from tests.engine.torch_verifier_helpers import DEVICES, near_ties, one_thread, random_batch  # noqa: F401 (fixture)

GROUPS = [(2, 1), (2, 2), (5, 1), (5, 3), (16, 1), (16, 2), (16, 4), (2000, 1), (2000, 4)]
"""(V, k) batches verified per verifier; V = 2000 takes NumPy's blocked inverse CDF."""
NODES_PER_GROUP = 500
PORTS = [name for name, cls in TORCH_VERIFIERS.items()
         if not issubclass(cls, (SharedRuleTorchVerifier, SharedSelectionTorchVerifier))]
"""The verifiers with a torch port of their rule (the others have one rule, the core's)."""


def test_registry_mirrors_the_numpy_zoo():
    assert list(TORCH_VERIFIERS) == list(VERIFIERS)  # every verifier of the zoo has its port
    for name, cls in TORCH_VERIFIERS.items():
        twin = VERIFIERS[name]
        assert cls.numpy_twin is twin
        attributes = ("name", "drafting", "claims_exact", "max_k")
        assert [getattr(cls, a) for a in attributes] == [getattr(twin, a) for a in attributes]
        module = importlib.import_module(cls.__module__)
        if name in PORTS:
            assert module.__name__ == f"engine.verifiers.{name}"
            assert f"Torch port of ``{twin.__module__}.{twin.__name__}``" in module.__doc__
        else:  # the core rule itself, through the one adapter
            assert module.__name__ == "engine.verifiers.shared_rule" and cls.__name__ == f"Torch{twin.__name__}"
        assert isinstance(get_torch_verifier(name), cls)
    with pytest.raises(ValueError, match="unknown torch verifier 'nope'; known: sps, rrs"):
        get_torch_verifier("nope")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", PORTS)
def test_decisions_match_numpy_given_the_same_uniforms(name, device):
    verifier, reference = get_torch_verifier(name), get_verifier(name)
    rng = np.random.default_rng(sorted(TORCH_VERIFIERS).index(name))
    generator = torch.Generator(device).manual_seed(7)
    nodes, mismatched, ties, outcomes = 0, [], 0, set()
    for vocab, k in GROUPS:
        if verifier.max_k is not None and k > verifier.max_k or verifier.scheme.bounded and k > vocab:
            continue
        p, q = random_batch(vocab, NODES_PER_GROUP, rng, k if verifier.scheme.bounded else 1, device)
        candidates = verifier.draft(q, k, generator)
        u = torch.rand((NODES_PER_GROUP, verifier.uniforms_needed(k)), dtype=torch.float64, device=device,
                       generator=generator)
        tokens, index = verifier.verify(p, q, candidates, u)
        tie = near_ties(verifier, p, q, candidates, u)
        ties += int(tie.sum())
        p_np, q_np, c_np, u_np = (x.cpu().numpy() for x in (p.double(), q.double(), candidates, u))
        for b in range(NODES_PER_GROUP):
            expected = reference.verify(p_np[b], q_np[b], c_np[b], u_np[b])
            if expected != (int(tokens[b]), int(index[b])):
                mismatched.append((vocab, k, b, expected, (int(tokens[b]), int(index[b])), bool(tie[b])))
        nodes += NODES_PER_GROUP
        outcomes |= set(index.tolist())
    print(f"\n{name} on {device}: {nodes} nodes, {len(mismatched)} mismatches, {ties} near ties")
    assert nodes >= 2000
    assert all(entry[-1] for entry in mismatched), mismatched  # only genuine rounding ties may disagree
    assert ties == 0  # none in this seeded set, so agreement is exact
    assert {-1, 0} <= outcomes and (verifier.max_k == 1 or 1 in outcomes)


@pytest.mark.parametrize("device", DEVICES)
def test_inverse_cdf_matches_numpy_including_overshoot(device):
    rng = np.random.default_rng(3)
    weights = rng.random((64, 3000)) * (rng.random((64, 3000)) < 0.5)
    weights[:, -100:] = 0.0  # trailing zeros: an overshoot must land on the last positive weight
    u = rng.random((64, 5))
    u[:, 0] = np.nextafter(1.0, 0.0)
    drawn = inverse_cdf(torch.tensor(weights, device=device), torch.tensor(u, device=device)).cpu().numpy()
    for b in range(64):
        assert drawn[b].tolist() == [numpy_inverse_cdf(weights[b], float(x)) for x in u[b]]
        assert drawn[b, 0] == np.flatnonzero(weights[b])[-1]
    zeros = torch.zeros(2, 4, dtype=torch.float64, device=device)
    empty = inverse_cdf(zeros, zeros[:, 0])
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


class _StubTorch(SequentialTorchVerifier):
    numpy_twin = _StubNumPy

    def _steps(self, p, q, candidates, plan):
        for _ in range(candidates.shape[1]):
            yield p.new_zeros(p.shape[0])
        return torch.where(p > 0, 0.0, 1.0)


def test_a_final_residual_without_mass_on_the_support_of_p_draws_from_p_in_both():
    p = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    candidates = torch.tensor([[0, 1], [2, 2]])
    u = torch.tensor([[0.1, 0.2, 0.3], [0.0, 0.9, 0.99]], dtype=torch.float64)
    tokens, index = _StubTorch().verify(p, p, candidates, u)
    assert tokens.tolist() == [0, 2] and index.tolist() == [-1, -1]
    expected = [_StubNumPy().verify(p[b].double().numpy(), p[b].double().numpy(), candidates[b].numpy(), u[b].numpy())
                for b in range(2)]
    assert expected == [(0, -1), (2, -1)]
    law = _StubNumPy().conditional_law(p[0].double().numpy(), p[0].double().numpy(), [0, 1])
    assert law.tolist() == [0.5, 0.5, 0.0]
