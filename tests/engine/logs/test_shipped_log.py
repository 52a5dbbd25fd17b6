"""The logged set shipped from the real model (`engine/data/smollm2_decoding_log.npz`, written by
``resispec generate --log``): it reads and validates in the simulator's format, its decisions replay
(every emitted token is a logged candidate or a residual draw), and the emitted tokens follow p.

Per verified node the emitted token Y has law p given (p, q, candidates) when the verifier is exact.
The log keeps each row's candidates and Y, so its kept ids depend on Y; the m ids of largest p + q over
the whole vocabulary (m = kept - (k + 1), all of them inside the kept ids) do not. With Z = Y if Y is
one of them and "other" if not, the randomized PIT ``P_p(Z' < Z) + U p(Z)`` (those ids ascending,
"other" last) is Uniform(0, 1) and independent across nodes. The first candidates, drawn from q, must fail
the same check: it has power on this log.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from resispec.audit import pit_audit
from resispec.formats.pairs import read_logged
from resispec.sim.explorer import Settings, evaluate

LOG_PATH = Path(__file__).resolve().parents[3] / "engine" / "data" / "smollm2_decoding_log.npz"


@pytest.fixture(scope="module")
def log():
    return read_logged(LOG_PATH)


def coarsened_pit(log, tokens: np.ndarray, seed: int) -> np.ndarray:
    """Randomized PIT under p of each row's coarsened token (``tokens`` (N,) ids, one per row)."""
    p = log.p.astype(np.float64)
    fixed = log.token_ids.shape[1] - (log.decisions["candidates"].shape[1] + 1)
    order = np.argsort(-(p + log.drafts["q"][0]), axis=1, kind="stable")
    in_top = np.zeros(log.token_ids.shape, dtype=bool)
    np.put_along_axis(in_top, order[:, :fixed], True, axis=1)
    masses = np.where(in_top, p, 0.0)
    hit = in_top & (log.token_ids == tokens[:, None])
    column = np.where(hit.any(axis=1), np.argmax(hit, axis=1), masses.shape[1])
    masses = np.concatenate([masses, 1.0 - masses.sum(axis=1, keepdims=True)], axis=1)
    below = np.where(np.arange(masses.shape[1]) < column[:, None], masses, 0.0).sum(axis=1)
    u = np.random.default_rng(seed).random(len(tokens))
    return np.clip(below + u * masses[np.arange(len(tokens)), column], 0.0, 1.0)


def test_the_log_is_a_sparse_log_of_the_real_model_with_decisions(log):
    assert log.sparse and log.vocab_size == 49152 and len(log) >= 150
    assert str(log.metadata["model"]) == "SmolLM2-135M-Instruct" and float(log.metadata["temperature"]) == 1.0
    assert "verifier resispec, tree 4,2,2,1" in str(log.metadata["note"])
    emitted, index, candidates = (log.decisions[name] for name in ("emitted", "accepted_index", "candidates"))
    assert (np.any(log.token_ids == emitted[:, None], axis=1)).all()
    accepted = index >= 0
    assert (candidates[accepted, index[accepted]] == emitted[accepted]).all()
    assert 0 < accepted.mean() < 1 and set(log.ids["depth"].tolist()) >= {0, 1}


def test_emitted_tokens_follow_the_target(log):
    assert pit_audit(coarsened_pit(log, log.decisions["emitted"], seed=0)).passed


def test_the_pit_check_has_power_here(log):
    """Each node's first candidate is a draw from q, not p: the same check rejects it."""
    assert pit_audit(coarsened_pit(log, log.decisions["candidates"][:, 0], seed=0)).pvalue < 1e-6


def test_the_simulator_compares_verifiers_on_the_log(log):
    evaluation = evaluate(f"logged:{LOG_PATH}", ["rrs", "resispec"], [2], Settings(pairs=len(log), seed=0))
    rrs, resispec = (evaluation.record(name, 2) for name in ("rrs", "resispec"))
    assert rrs["pairs"] == len(log)
    assert rrs["acceptance"] <= resispec["acceptance"] <= resispec["iid_optimum"] + 1e-12
