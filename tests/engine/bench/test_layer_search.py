"""The layer-skip draft's layer search on a tiny model: nested sets by importance, measured A(L), the choice."""

from __future__ import annotations

import pytest
import torch

from resispec.engine.bench.layer_search import _Texts, search_layers
from resispec.engine.decode.processing import Sampling
from resispec.engine.model.tiny import tiny_llama


@pytest.fixture
def one_thread():
    """One torch thread: the search times hundreds of tiny products, which two threads on a loaded machine
    slow tenfold (docs/draft.md, "Compute")."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_the_search_nests_the_sets_by_importance_and_picks_a_proper_subset(one_thread):
    target = tiny_llama(seed=3, num_layers=4)
    prompts = [torch.tensor([1, 2, 3]), torch.tensor([5, 4])]
    result = search_layers(target, prompts, new_tokens=6, repeats=1, progress=False)
    assert result.full_acceptance > 0.999  # all layers: the target itself
    assert [len(s.layers) for s in result.sets] == [1, 2, 3, 4]
    for smaller, larger in zip(result.sets, result.sets[1:]):
        assert set(smaller.layers) < set(larger.layers)
    dropped_first = (set(result.sets[-1].layers) - set(result.sets[-2].layers)).pop()
    assert result.importance[dropped_first] == min(result.importance)  # the least important goes first
    texts = _Texts(target, prompts, 6, Sampling(1.0), seed=0)
    assert abs(texts.acceptance(result.sets[1].layers) - result.sets[1].acceptance) < 1e-6  # A(L) as measured
    assert len(result.best.layers) < 4 and result.best.tokens_per_second == max(
        s.tokens_per_second for s in result.sets[:-1])
