"""Entry points that allocate by their arguments refuse sizes past a limit named in the error (issue 31,
item 5; docs/limits.md)."""

from __future__ import annotations

import numpy as np
import pytest

import resispec
from resispec.bounds_wor import sequential_optimum_wor_lp
from resispec.explore.model import State
from resispec.limits import MAX_DRAWN_CANDIDATES, SEQUENTIAL_LP_MAX_NODES


def test_draft_and_verify_refuses_past_the_drawn_candidates_limit():
    p = q = np.full(4, 0.25)
    bound = resispec.get_verifier("rrs").bind(p, q, 4)
    with pytest.raises(ValueError, match="n: 100000000000 samples .*MAX_DRAWN_CANDIDATES"):
        bound.draft_and_verify(10**11, np.random.default_rng(0))  # asked for 5 TiB before
    tokens, _ = bound.draft_and_verify(MAX_DRAWN_CANDIDATES // 4, np.random.default_rng(0))
    assert tokens.shape == (MAX_DRAWN_CANDIDATES // 4,)


def test_the_sequential_wor_lp_refuses_what_would_run_for_minutes():
    vocab = 447  # 199,809 nodes at k = 2: under the old limit, past 4 minutes
    p = q = np.full(vocab, 1 / vocab)
    with pytest.raises(ValueError, match=f"more than {SEQUENTIAL_LP_MAX_NODES}"):
        sequential_optimum_wor_lp(p, q, 2)


def test_the_explorer_state_takes_lists():
    state = State(p=[0.5, 0.5], q=[0.25, 0.75], k=2)
    assert isinstance(state.p, np.ndarray) and state.p.shape == (2,)
    with pytest.raises(ValueError, match="different sizes"):
        State(p=[0.5, 0.5], q=[0.2, 0.3, 0.5], k=2)
