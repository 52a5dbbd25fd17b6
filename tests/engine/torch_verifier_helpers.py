"""Shared pieces of the torch verifier tests: devices, a one-thread fixture and seeded node batches."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch
from scipy.special import softmax

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA"))]
KINDS = ("dirichlet", "equal", "one-hot-p", "one-hot-q", "zeros", "tiny", "disjoint", "ties", "peaky")


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
