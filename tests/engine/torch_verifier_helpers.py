"""Shared pieces of the torch verifier tests: devices, a one-thread fixture, seeded node batches, and
the near-tie check of the parity tests."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch
from scipy.special import softmax

from engine.verifiers import SequentialTorchVerifier, TorchVerifier
from engine.verifiers.validation import as_pair
from resispec.verifiers.base import _final_residual

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA"))]
KINDS = ("dirichlet", "equal", "one-hot-p", "one-hot-q", "zeros", "tiny", "disjoint", "ties", "peaky")
TIE_TOLERANCE = 1e-12


@pytest.fixture(autouse=True, scope="module")
def one_thread() -> Iterator[None]:
    """One intra-op thread while these tests run: they issue many small ops, which a shared, loaded
    machine slows down by orders of magnitude when each op waits for a second thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def random_node(kind: str, vocab: int, rng: np.random.Generator, min_support: int) -> tuple[np.ndarray, np.ndarray]:
    """One ``(p, q)`` of the given kind (float64); q has at least ``min_support`` positive entries."""
    p, q = rng.dirichlet(np.full(vocab, rng.choice([0.1, 0.5, 2.0]))), rng.dirichlet(np.full(vocab, 0.5))
    if kind == "equal":
        q = p.copy()
    elif kind == "one-hot-p":
        p = np.eye(vocab)[rng.integers(vocab)]
    elif kind == "one-hot-q":
        q = np.eye(vocab)[rng.integers(vocab)]
    elif kind == "zeros":
        p, q = p * (rng.random(vocab) < 0.6), q * (rng.random(vocab) < 0.6)
    elif kind == "tiny":
        p, q = np.where(rng.random(vocab) < 0.4, 1e-12, p), np.where(rng.random(vocab) < 0.4, 1e-12, q)
    elif kind == "disjoint":
        cut = rng.integers(1, vocab)
        p, q = np.r_[p[:cut] + 1e-3, np.zeros(vocab - cut)], np.r_[np.zeros(cut), q[cut:] + 1e-3]
    elif kind == "ties":
        q = 0.5 * p + 0.5 * np.roll(p, 1)
    elif kind == "peaky":
        logits = 3.0 * rng.standard_normal(vocab)
        p, q = softmax(logits), softmax(logits + rng.standard_normal(vocab))
    p = p if p.sum() > 0 else np.ones(vocab)
    if np.count_nonzero(q) < min_support:
        q = 0.9 * q / max(q.sum(), 1e-300) + 0.1 / vocab
    return p / p.sum(), q / q.sum()


def random_batch(vocab: int, batch: int, rng: np.random.Generator, min_support: int = 1,
                 device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """(B, V) float32 target and draft on ``device`` (V >= 2), node kinds cycling through ``KINDS``."""
    pairs = [random_node(KINDS[b % len(KINDS)], vocab, rng, min_support) for b in range(batch)]
    return tuple(torch.tensor(np.array(side), dtype=torch.float32, device=device) for side in zip(*pairs))


def near_ties(verifier: TorchVerifier, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor,
              u: torch.Tensor) -> torch.Tensor:
    """Nodes (bool (B,)) where some uniform of a sequential verifier lies within ``TIE_TOLERANCE`` of its
    threshold: an acceptance probability, or a cumulative boundary of the final residual (relative to
    its mass)."""
    assert isinstance(verifier, SequentialTorchVerifier), f"{verifier.name}: near ties of sequential ports only"
    p64, q64 = as_pair(p, q)
    return _sequential_near_ties(verifier, p64, q64, candidates, u, verifier._prepare(p64, q64, candidates.shape[1]))


def _sequential_near_ties(verifier: SequentialTorchVerifier, p: torch.Tensor, q: torch.Tensor,
                          candidates: torch.Tensor, u: torch.Tensor, plan: object) -> torch.Tensor:
    k = candidates.shape[1]
    steps = verifier._steps(p, q, candidates, plan)
    near = torch.zeros(p.shape[0], dtype=torch.bool, device=p.device)
    for i in range(k):
        near |= (u[:, i] - next(steps)).abs() < TIE_TOLERANCE
    return near | _near_residual_boundary(torch.cumsum(_final_residual(steps), dim=-1), u[:, k:])


def _near_residual_boundary(cumulative: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    total = cumulative[:, -1:]
    return ((cumulative - u * total).abs() < TIE_TOLERANCE * total).any(dim=-1)
