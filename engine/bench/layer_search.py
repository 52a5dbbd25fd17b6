"""Choosing the layer-skip draft's layers (`resispec.engine.drafts.layer_skip`) by measured acceptance and cost.

On target-sampled continuations of the calibration prompts (training prompts, never the benchmark's; T = 1):

1. ``A(L) = mean_t sum_x min(p_t, q^L_t)``, the one-candidate acceptance of the draft keeping layers L,
   teacher-forced on the continuation, q^L started on the target's prompt cache as the loop starts it;
2. the importance of layer l: ``A(all) - A(all \\ {l})``; the nested sets drop the least important first,
   ``L_K`` = the K most important layers (ascending);
3. cost: one draft forward of one row, measured at a few K and fitted linearly, ``c(K) = c_0 + c_1 K``
   (the head and per-forward overhead, then a layer); the target's forward over n nodes measured as
   `resispec.engine.decode.calibration.measure_costs` does;
4. for every K the best chain for ``A(L_K)`` (`resispec.engine.decode.tree_search.best_tree`, one child per node),
   its predicted tokens per second, and the K < N that maximises it (``best``), against the target's own
   ``1 / t(1)`` (autoregressive sampling).

The measured figures are a function of the target and the machine; ``DEFAULT_LAYERS`` in
`resispec.engine.drafts.layer_skip` holds this search's result for the shipped model (docs/draft.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from resispec.engine.bench.draft_eval import forward_seconds
from resispec.engine.decode.calibration import COST_POINTS, interpolate, lm_grow, measure_costs, sample_continuation
from resispec.engine.decode.processing import Sampling, draft_probs, target_probs
from resispec.engine.decode.tree_search import best_tree
from resispec.engine.drafts.layer_skip import LayerSkipDraft
from resispec.engine.runtime.compact_lm import CompactLM
from resispec.progress import Progress

COST_LAYER_COUNTS = (4, 16, 28)
"""Kept-layer counts at which the draft's one-row forward is timed (then fitted linearly)."""


@dataclass
class LayerSetFigures:
    """One nested layer set: its layers, acceptance A(L), fitted draft cost (s) and best chain's prediction."""

    layers: list[int]
    acceptance: float
    draft_seconds: float
    chain: int
    tokens_per_second: float


@dataclass
class LayerSearch:
    """The search's result: ``importance[l]`` (acceptance lost without layer l), the nested sets (K = 1..N),
    the target's one-node forward (s) and the chosen set."""

    full_acceptance: float
    importance: list[float]
    sets: list[LayerSetFigures]
    target_seconds: float

    @property
    def best(self) -> LayerSetFigures:
        """The proper subset of the highest predicted tokens per second (all layers is no layer skip)."""
        return max(self.sets[:-1], key=lambda figures: figures.tokens_per_second)


class _Texts:
    """The calibration texts with p along each, and a fresh target cache per prompt for `prefill_from`."""

    def __init__(self, model, prompts: Sequence[torch.Tensor], new_tokens: int, sampling: Sampling, seed: int):
        generator = torch.Generator().manual_seed(seed)
        self.model, self.sampling, self.texts = model, sampling, []
        for prompt in prompts:
            target = CompactLM(model)
            sequence = sample_continuation(target, prompt, new_tokens, sampling, generator)
            chain = sequence[len(prompt) - 1:]
            parents = torch.arange(-1, len(chain) - 1)
            p = target_probs(lm_grow(target, prompt, chain, parents).float(), sampling)[:-1]
            target.prefill(prompt)  # fresh again: the draft starts on its prompt cache
            self.texts.append((prompt, chain, parents, p, target))

    def acceptance(self, layers: list[int]) -> float:
        """``A(L)``: mean one-candidate acceptance over every position of every text."""
        draft, overlaps = LayerSkipDraft(self.model, layers), []
        for prompt, chain, parents, p, target in self.texts:
            draft.prefill_from(target, prompt)
            q = draft_probs(draft.grow(chain, parents).float(), self.sampling)[:-1]
            overlaps.append(torch.minimum(p, q).sum(dim=-1))
        return float(torch.cat(overlaps).mean())


def search_layers(model, prompts: Sequence[torch.Tensor], new_tokens: int = 32, sampling: Sampling = Sampling(),
                  repeats: int = 7, seed: int = 0, progress: bool = True) -> LayerSearch:
    """Run the search of the module docstring for the target ``model`` on the tokenized ``prompts``."""
    total = model.config.num_hidden_layers
    everything = list(range(total))
    with Progress(total=2 * total + len(COST_LAYER_COUNTS) + 1, desc="layer-skip search", unit="set",
                  disable=None if progress else True) as bar:
        texts = _Texts(model, prompts, new_tokens, sampling, seed)
        full = texts.acceptance(everything)
        bar.update()
        importance = []
        for layer in everything:
            importance.append(full - texts.acceptance([i for i in everything if i != layer]))
            bar.update()
        order = sorted(everything, key=lambda layer: -importance[layer])  # most important first
        nested = {k: sorted(order[:k]) for k in range(1, total + 1)}
        accepted = {}
        for k in range(1, total + 1):
            accepted[k] = full if k == total else texts.acceptance(nested[k])
            bar.update()
        counts = [k for k in COST_LAYER_COUNTS if k <= total]
        seconds = []
        for k in counts:
            seconds.append(forward_seconds(LayerSkipDraft(model, nested[k]), prompts[0], repeats))
            bar.update()
        slope, intercept = np.polyfit(counts, seconds, 1) if len(counts) > 1 else (0.0, seconds[0])
        target_curve = measure_costs(CompactLM(model), prompts[0], COST_POINTS, repeats)
        bar.update()
    sets = []
    for k in range(1, total + 1):
        cost = float(intercept + slope * k)
        choice = best_tree([accepted[k]], lambda n: interpolate(target_curve, n), lambda _rows, cost=cost: cost,
                           max_children=1)
        sets.append(LayerSetFigures(nested[k], accepted[k], cost, len(choice.branching), choice.tokens_per_second))
    return LayerSearch(full, importance, sets, target_curve[1])
