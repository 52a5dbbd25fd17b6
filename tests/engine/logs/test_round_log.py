"""Round logs written by the engine (``resispec.engine.logs.round_log``) over the tiny models: the replay in the
simulator (``resispec.sim.rounds``) scores every round exactly as scoring the decoder's own tree does."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from resispec.engine.decode.decoding import Decoder
from resispec.engine.decode.processing import Sampling
from resispec.engine.logs.round_log import LoggingRound, RoundLog
from resispec.engine.runtime.tree_lm import TreeLM
from resispec.formats.pairs import read_logged
from resispec.sequence import get_round_verifier
from resispec.sequence.tree import round_tree
from resispec.sim.rounds import DEFAULT_VERIFIERS, log_kind, score_log

PROMPT = torch.tensor([1, 4, 2])
DRIVINGS = {"iid": ("traversal", (2, 2)), "wor": ("traversal_wor", (3, 1)), "chain": ("block", (1, 1, 1))}


class Capture:
    """Keeps each round's (parents, tokens, p, q) as the decoder hands them over."""

    def __init__(self, inner) -> None:
        self.inner, self.rounds = inner, []

    def __call__(self, tree, tokens, p, q, rng):
        self.rounds.append((tree.parents.numpy().copy(), tokens.numpy().copy(), p.double().numpy(), q.double().numpy()))
        return self.inner(tree, tokens, p, q, rng)


def logged_decoding(tiny_models, kind: str, keep: int | None) -> tuple[Capture, RoundLog, list[int]]:
    target, draft = tiny_models
    driver, branching = DRIVINGS[kind]
    decoder = Decoder(target, TreeLM(draft), driver, branching, Sampling(1.0), seed=7)
    log = RoundLog(target.config.vocab_size, "wor" if kind == "wor" else "iid", keep)
    capture = Capture(LoggingRound(decoder.round_verifier, log))
    decoder.round_verifier = capture
    return capture, log, list(decoder.generate(PROMPT, 16))


@pytest.mark.parametrize("kind", list(DRIVINGS))
def test_replayed_rounds_score_as_the_decoders_trees(tiny_models, tmp_path, kind):
    capture, log, tokens = logged_decoding(tiny_models, kind, keep=None)
    assert log.write(tmp_path / "rounds.npz") == len(capture.rounds) >= 4
    logged = read_logged(tmp_path / "rounds.npz")
    assert log_kind(logged) == kind and not logged.sparse
    _, accepted = score_log(logged, progress=False)
    vocab = logged.vocab_size
    for name in DEFAULT_VERIFIERS[kind]:
        verifier = get_round_verifier(name)
        direct = []
        for parents, drafted, p, q in capture.rounds:
            tree = round_tree(parents, drafted, vocab)
            direct.append(verifier.law(tree, p, q).expected_accepted(tree))
        assert np.allclose(accepted[name], direct, rtol=0, atol=1e-12), name
    # logging watches only: the same seed without the log decodes the same tokens
    target, draft = tiny_models
    plain = Decoder(target, TreeLM(draft), DRIVINGS[kind][0], DRIVINGS[kind][1], Sampling(1.0), seed=7)
    assert list(plain.generate(PROMPT, 16)) == tokens


def test_sparse_round_log_keeps_every_child_and_matches_the_dense_one(tiny_models):
    _, dense, _ = logged_decoding(tiny_models, "iid", keep=None)
    _, full, _ = logged_decoding(tiny_models, "iid", keep=8)  # all 8 ids kept, float32 rows
    _, cut, _ = logged_decoding(tiny_models, "iid", keep=2)  # 2 ids: exactly the children's tokens where distinct
    expected = score_log(dense.logged(), ["rrs", "traversal"], progress=False)[1]
    got = score_log(full.logged(), ["rrs", "traversal"], progress=False)[1]
    for name in expected:
        assert np.allclose(got[name], expected[name], rtol=0, atol=1e-5)
    sparse = cut.logged()  # validated: every child's token is among its parent's kept ids
    assert sparse.sparse and sparse.token_ids.shape[1] == 2
    with pytest.raises(ValueError, match="keep: must lie in"):
        RoundLog(8, "iid", keep=9)
