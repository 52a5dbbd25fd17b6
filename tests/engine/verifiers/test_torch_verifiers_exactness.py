"""Exactness of the torch verifiers by sampling: batched draft + verify against p.

Every node of a batch is the same small pair from the audit suite, so one batched call gives n
independent draws of (draft, verify). Exact verifiers must pass a chi-square against p (sparse bins
merged, Bonferroni over the suite) and accept as often as the NumPy rule's exact acceptance; each
control must be rejected on the pair where its exact-law bias is largest. The drafting schemes'
tuple frequencies are tested against the NumPy tuple probabilities.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from resispec.audit import DEFAULT_ALPHA, exact_law
from resispec.audit.goodness_of_fit import merged_chi_square
from resispec.drafting import DRAFTING_SCHEMES
from resispec.engine.verifiers import TorchVerifier, get_torch_verifier
from resispec.engine.verifiers.drafting import TORCH_DRAFTING_SCHEMES
from resispec.suite import get_suite
from resispec.verifiers import VERIFIERS, get_verifier
from tests.engine.torch_verifier_helpers import DEVICES, one_thread  # noqa: F401 (fixture)

SAMPLES = 20_000
EXACT = [name for name, cls in VERIFIERS.items() if cls.claims_exact]
CONTROLS = [name for name, cls in VERIFIERS.items() if not cls.claims_exact]


def sample_tokens(verifier: TorchVerifier, p: np.ndarray, q: np.ndarray, k: int, n: int, seed: int,
                  device: str = "cpu") -> tuple[np.ndarray, float]:
    """Token counts (V,) and acceptance rate of n batched draft + verify runs on the pair (p, q)."""
    generator = torch.Generator(device).manual_seed(seed)
    p_batch = torch.tensor(p, dtype=torch.float32, device=device).expand(n, -1)
    q_batch = torch.tensor(q, dtype=torch.float32, device=device).expand(n, -1)
    candidates = verifier.draft(q_batch, k, generator)
    tokens, index = verifier.verify_with(p_batch, q_batch, candidates, generator)
    return torch.bincount(tokens, minlength=p.size).cpu().numpy(), float((index >= 0).double().mean())


def cases(name: str) -> list[tuple]:
    """(pair, k) of the standard suite the verifier can draft: k = 2 and 4 (k = 1 if max_k is 1)."""
    verifier = get_verifier(name)
    ks = (2, 4) if verifier.max_k is None else (1,)
    return [(pair, k) for pair in get_suite() for k in ks
            if verifier.scheme.max_candidates(pair.q) is None or k <= verifier.scheme.max_candidates(pair.q)]


@pytest.mark.slow
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", EXACT)
def test_exact_verifiers_emit_p_and_accept_at_the_exact_rate(name, device):
    verifier, reference = get_torch_verifier(name), get_verifier(name)
    audits = cases(name)
    alpha = DEFAULT_ALPHA / len(audits)
    failures = []
    for seed, (pair, k) in enumerate(audits):
        counts, rate = sample_tokens(verifier, pair.p, pair.q, k, SAMPLES, seed, device)
        chi = merged_chi_square(counts, pair.p)
        acceptance = reference.acceptance(pair.p, pair.q, k)
        spread = 5.0 * np.sqrt(max(acceptance * (1.0 - acceptance), 0.0) / SAMPLES) + 1e-9
        if chi.pvalue < alpha or abs(rate - acceptance) > spread:
            failures.append((pair.name, k, chi.pvalue, rate, acceptance))
    assert len(audits) >= 10 and not failures, failures


def worst_case(name: str) -> tuple[float, object, int]:
    """The (bias TV, pair, k) of the suite where the control's exact law is furthest from p."""
    return max(((exact_law(name, pair.p, pair.q, k).tv, pair, k) for pair, k in cases(name)), key=lambda case: case[0])


@pytest.mark.parametrize("name", CONTROLS)
def test_each_control_is_rejected_where_its_bias_is_largest(name):
    bias, pair, k = worst_case(name)
    counts, _ = sample_tokens(get_torch_verifier(name), pair.p, pair.q, k, SAMPLES, seed=1)
    assert bias > 0.02
    assert merged_chi_square(counts, pair.p).pvalue < DEFAULT_ALPHA, (pair.name, k, bias)


@pytest.mark.parametrize("scheme", ["iid", "wor"])
def test_drafted_tuples_follow_the_numpy_tuple_probabilities(scheme):
    q = np.array([0.55, 0.25, 0.0, 0.15, 0.05])
    k = 2
    generator = torch.Generator().manual_seed(3)
    drafts = TORCH_DRAFTING_SCHEMES[scheme].draft(torch.tensor(q).expand(SAMPLES, -1), k, generator)
    tuples = dict(DRAFTING_SCHEMES[scheme].tuples(q, k))
    cells = {candidates: index for index, candidates in enumerate(tuples)}
    counts = np.zeros(len(cells) + 1, dtype=np.int64)  # the last cell: tuples the scheme cannot produce
    for row in drafts.tolist():
        counts[cells.get(tuple(row), len(cells))] += 1
    chi = merged_chi_square(counts, np.append(np.array(list(tuples.values())), 0.0))
    assert chi.impossible == 0 and chi.pvalue >= DEFAULT_ALPHA, chi
