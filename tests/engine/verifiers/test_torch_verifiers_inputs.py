"""Bad inputs to the torch verifiers: a ValueError that names the argument (and the batch row)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from resispec.engine.verifiers import get_torch_verifier
from resispec.engine.verifiers.validation import as_pair
from resispec.validation import ROUNDING_SLACK
from resispec.validation import as_pair as numpy_as_pair
from tests.engine.torch_verifier_helpers import one_thread, random_batch  # noqa: F401 (fixture)

P = torch.tensor([[0.5, 0.3, 0.2, 0.0], [0.1, 0.2, 0.3, 0.4]])
Q = torch.tensor([[0.4, 0.4, 0.0, 0.2], [0.25, 0.25, 0.25, 0.25]])
CANDIDATES = torch.tensor([[0, 1], [3, 2]])
U = torch.full((2, 3), 0.5, dtype=torch.float64)


def with_entry(tensor: torch.Tensor, row: int, column: int, value: float) -> torch.Tensor:
    changed = tensor.clone()
    changed[row, column] = value
    return changed


BAD_VERIFY = [
    ("rrs", dict(p=P.numpy()), r"p \(target\): expected a torch.Tensor of shape \(B, V\), got ndarray"),
    ("rrs", dict(p=P[0]), r"p \(target\): expected a non-empty tensor of shape \(B, V\), got shape \(4,\)"),
    ("rrs", dict(p=torch.ones(2, 4, dtype=torch.long)), r"p \(target\): expected floating-point probabilities"),
    ("rrs", dict(p=with_entry(P, 1, 2, float("nan"))), r"p \(target\): entry 2 is nan \(NaN or inf\).*\(batch row 1\)"),
    ("rrs", dict(q=with_entry(Q, 0, 2, -0.1)), r"q \(draft\): entry 2 is negative .*\(batch row 0\)"),
    ("rrs", dict(p=P * 1.01),
     r"p \(target\): sums to 1.0100000\d*, off from 1 by more than the tolerance 0.0001 \(batch row 0\)"),
    ("rrs", dict(p=P.double() * 1.01),
     r"p \(target\): sums to 1.01000*\d*, off from 1 by more than the tolerance 1e-06 \(batch row 0\)"),
    ("rrs", dict(q=torch.full((2, 3), 1 / 3)), r"different shapes \(B, V\): \(2, 4\) != \(2, 3\)"),
    ("rrs", dict(q=Q.to("meta")), r"q \(draft\): on device meta, but p \(target\) is on cpu"),
    ("rrs", dict(candidates=CANDIDATES.float()), r"candidates: token ids must be integers, got dtype torch.float32"),
    ("rrs", dict(candidates=CANDIDATES[:1]), r"candidates: expected 2 rows \(one per node\), got shape \(1, 2\)"),
    ("rrs", dict(candidates=with_entry(CANDIDATES, 1, 0, 4)),
     r"candidates: id 4 at position 0 is outside the vocabulary \[0, 4\) \(batch row 1\)"),
    ("rrs", dict(candidates=with_entry(CANDIDATES, 0, 1, 2)),
     r"candidates: token 2 at position 1 has draft probability q = 0.*\(batch row 0\)"),
    ("rrs_wor", dict(candidates=torch.tensor([[0, 1], [3, 3]])),
     r"candidates: token 3 appears more than once.*\(batch row 1\)"),
    ("topk", dict(candidates=torch.tensor([[0, 1], [1, 0]])),
     r"candidates: \[1, 0\] are not the draft's top-2 tokens \[0, 1\].*\(batch row 1\)"),
    ("sps", dict(), r"k: sps takes at most 1 candidate\(s\), got k = 2"),
    ("rrs_wor", dict(q=torch.tensor([[0.4, 0.6, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]),
          candidates=torch.tensor([[0, 1], [3, 2]])),
     r"k: wor drafting needs k <= the draft's support, but k = 2 and only 1 tokens have q > 0 \(batch row 1\)"),
    ("rrs", dict(u=U.float()), r"u: expected float64 uniforms"),
    ("rrs", dict(u=U[:, :2]), r"u: expected shape \(2, 3\) \(B nodes, 3 uniforms each\), got \(2, 2\)"),
    ("rrs", dict(u=with_entry(U, 1, 2, 1.0)),
     r"u: uniform 2 is .*1.0\)?; every uniform must lie in \[0, 1\) \(batch row 1\)"),
    ("pooled", dict(), r"u: expected shape \(2, 6\) \(B nodes, 6 uniforms each\), got \(2, 3\)"),  # 2k + 2
    ("pooled", dict(u=torch.full((2, 6), 0.5, dtype=torch.float64), candidates=with_entry(CANDIDATES, 0, 0, 2)),
     r"candidates: token 2 at position 0 has draft probability q = 0.*\(batch row 0\)"),
]


@pytest.mark.parametrize("name, changes, message", BAD_VERIFY)
def test_bad_verify_inputs_name_the_argument(name, changes, message):
    arguments = dict(p=P, q=Q, candidates=CANDIDATES, u=U) | changes
    with pytest.raises(ValueError, match=message):
        get_torch_verifier(name).verify(**arguments)


def test_the_unchanged_inputs_are_valid():
    tokens, index = get_torch_verifier("rrs").verify(P, Q, CANDIDATES, U)
    assert tokens.shape == index.shape == (2,) and tokens.dtype == index.dtype == torch.long
    tokens, index = get_torch_verifier("pooled").verify(P, Q, CANDIDATES, torch.full((2, 6), 0.5, dtype=torch.float64))
    assert tokens.shape == index.shape == (2,) and tokens.dtype == index.dtype == torch.long


def test_renormalised_rows_are_numpys_bit_for_bit_on_cpu():
    """Float32 rows miss a sum of 1 by more than ROUNDING_SLACK and are divided by their sum: the
    same sum as NumPy's, so the rows pooled ranks by ratio are NumPy's (its rule changes at ratio ties)."""
    p, q = random_batch(2000, 200, np.random.default_rng(8))
    p64, q64 = as_pair(p, q)
    for b in range(200):
        numpy_p, numpy_q = numpy_as_pair(p[b].double().numpy(), q[b].double().numpy())
        assert np.array_equal(p64[b].numpy(), numpy_p) and np.array_equal(q64[b].numpy(), numpy_q)
    torch_sums, numpy_sums = p.double().sum(dim=-1).numpy(), p.double().numpy().sum(axis=-1)
    assert (np.abs(numpy_sums - 1) > ROUNDING_SLACK).sum() >= 150  # most rows were renormalised
    assert (torch_sums != numpy_sums).sum() >= 5  # and torch's own sums would have differed in some


@pytest.mark.parametrize("k, generator, message", [
    (0, torch.Generator(), r"k: the number of candidates must be >= 1, got 0"),
    (2.0, torch.Generator(), r"k: expected an integer number of candidates, got 2.0"),
    (3, torch.Generator(), r"k: wor drafting needs k <= the draft's support, but k = 3 and only 2 tokens have q > 0"),
    (2, None, r"generator: expected a torch.Generator, got NoneType"),
])
def test_bad_draft_inputs_name_the_argument(k, generator, message):
    q = torch.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    with pytest.raises(ValueError, match=message):
        get_torch_verifier("rrs_wor").draft(q, k, generator)


def test_sums_within_the_tolerance_are_renormalised_to_the_same_decisions():
    generator = torch.Generator().manual_seed(0)
    p = torch.rand(50, 6, generator=generator, dtype=torch.float64)
    p /= p.sum(dim=-1, keepdim=True)
    q = torch.full((50, 6), 1 / 6, dtype=torch.float64)
    verifier = get_torch_verifier("resispec")
    candidates = verifier.draft(q, 3, generator)
    u = torch.rand((50, 4), dtype=torch.float64, generator=generator)
    assert all(torch.equal(a, b) for a, b in zip(verifier.verify(p * (1 + 5e-7), q, candidates, u),
                                                 verifier.verify(p, q, candidates, u)))


def test_float32_rows_get_the_float32_tolerance():
    from resispec.engine.verifiers.validation import as_distributions

    off = torch.tensor([[0.5, 0.50003], [0.25, 0.75]])
    assert torch.allclose(as_distributions(off, "p").sum(dim=-1), torch.ones(2, dtype=torch.float64))
    with pytest.raises(ValueError, match="tolerance 1e-06"):
        as_distributions(off.double(), "p")
    with pytest.raises(ValueError, match="tolerance 0.0001.*batch row 0"):
        as_distributions(torch.tensor([[0.5, 0.5002], [0.25, 0.75]]), "p")
