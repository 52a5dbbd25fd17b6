"""The support invariant for the torch verifiers and the decoder: no token with p = 0 is ever emitted.

Every exact verifier of the zoo (from the registry, so a new one is covered once registered) on the
extreme-magnitude instances of ``tests.extreme`` (masses from 1e-320 to 1, zeros), with seeded
uniforms and the extremes 0 and 1 - ulp; then the decoding loop with tiny models, greedy (p one-hot,
q at T = 1: most candidates have p = 0) and top-k = 2 (p and q keep different tokens).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings

from resispec.engine.decode.decoding import Decoder
from resispec.engine.decode.processing import Sampling
from resispec.engine.logs.node_log import NodeLog
from resispec.engine.runtime.tree_lm import TreeLM
from resispec.engine.verifiers import get_torch_verifier
from resispec.verifiers import VERIFIERS
from tests.engine.torch_verifier_helpers import one_thread  # noqa: F401  (autouse fixture)
from tests.extreme import extreme_instances

EXACT = [name for name, cls in VERIFIERS.items() if cls.claims_exact]
ROWS = 16
"""Nodes per batch: the same (p, q) repeated, each with its own candidates and uniforms."""


@pytest.mark.parametrize("name", EXACT)
@settings(max_examples=40)
@given(instance=extreme_instances())
def test_torch_ports_never_emit_a_token_outside_the_support_of_p(name, instance):
    p, q, k = instance
    verifier = get_torch_verifier(name)
    p_rows = torch.tensor(np.tile(p, (ROWS, 1)))
    q_rows = torch.tensor(np.tile(q, (ROWS, 1)))
    generator = torch.Generator().manual_seed(0)
    try:
        candidates = verifier.draft(q_rows, k, generator)
    except ValueError as error:
        assume("k:" not in str(error))
        raise
    needed = verifier.uniforms_needed(k)
    u = torch.rand((ROWS, needed), dtype=torch.float64, generator=generator)
    u[0], u[1] = 0.0, float(np.nextafter(1.0, 0.0))
    tokens, _ = verifier.verify(p_rows, q_rows, candidates, u)
    assert (torch.tensor(p)[tokens] > 0).all(), (name, p, q, candidates, tokens)


@pytest.mark.parametrize("sampling", [Sampling(0.0), Sampling(1.0, top_k=2)], ids=["greedy", "top-k-2"])
@pytest.mark.parametrize("verifier", [name for name in EXACT if VERIFIERS[name].max_k is None])
def test_the_decoder_never_emits_a_token_outside_the_support_of_p(tiny_models, verifier, sampling):
    target, draft = tiny_models
    log = NodeLog(target.config.vocab_size, keep=target.config.vocab_size)
    decoder = Decoder(target, TreeLM(draft), verifier, (3, 2), sampling, seed=5, log=log)
    list(decoder.generate(torch.tensor([1, 4, 2]), 24))
    assert log.rows
    for kept, p, *_, token, _index, _chain, _position, _depth in log.rows:
        assert p[np.flatnonzero(kept == token)[0]] > 0, (verifier, token, p)
