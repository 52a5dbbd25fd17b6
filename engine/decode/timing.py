"""Timing the model side of the engine: target load (first and cached), tree forwards, draft cost.

Every forward figure is the median over `repeats` runs of one ``grow`` on top of a cached prompt;
between runs the tree is dropped (``commit`` of nothing), so each run sees the same cache. Forward cost
per node count compares transformers' own forward (`TreeLM`, before) with `CompactLM` (after), in one run.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from resispec.engine.drafts import EarlyExitDraft, SelfDraft, TrainedDraft
from resispec.engine.drafts.trained import WEIGHTS_PATH
from resispec.engine.model.models import load_target
from resispec.engine.model.quantize import SCHEMES as SELF_DRAFT_SCHEMES
from resispec.engine.runtime.compact_lm import CompactLM
from resispec.engine.runtime.tree import CandidateTree
from resispec.engine.runtime.tree_lm import TreeCacheLM, TreeLM

NODE_COUNTS = (1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64)


@dataclass(frozen=True)
class LoadTimes:
    """Seconds for `load_target`: from the GGUF (dequantize + write the cache) and from the cache."""

    first_s: float
    cached_s: float


@dataclass(frozen=True)
class ForwardTimes:
    """Median seconds per forward on top of a cached prompt of `prompt_len` tokens.

    Attributes:
        target_token_s: the target p on one token (the root).
        target_tree_s: the target p on the whole tree (`tree_nodes` nodes, root included) in one pass.
        draft_token_s: each draft q on one token, by label: "early exit L=<layers>" for the early-exit
            drafts, "trained" for the trained default draft (when its weights are installed).
        draft_levels_s: each draft growing the tree level by level (leaves not fed), by label.
    """

    prompt_len: int
    tree_nodes: int
    target_token_s: float
    target_tree_s: float
    draft_token_s: dict[str, float]
    draft_levels_s: dict[str, float]


def median_seconds(run: Callable[[], object], repeats: int, setup: Callable[[], object] | None = None) -> float:
    """Median wall time of `run()` over `repeats` calls, after one warm-up call; ``setup()``, untimed, before
    each call where given."""
    setup = setup or (lambda: None)
    setup()
    run()
    times = []
    for _ in range(repeats):
        setup()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_loads() -> LoadTimes:
    """Load the target twice through a fresh temporary cache folder ($RESISPEC_CACHE is restored after)."""
    saved = os.environ.get("RESISPEC_CACHE")
    with tempfile.TemporaryDirectory(prefix="resispec-cache-") as folder:
        os.environ["RESISPEC_CACHE"] = folder
        try:
            start = time.perf_counter()
            load_target()
            middle = time.perf_counter()
            load_target()
            end = time.perf_counter()
        finally:
            if saved is None:
                del os.environ["RESISPEC_CACHE"]
            else:
                os.environ["RESISPEC_CACHE"] = saved
    return LoadTimes(first_s=middle - start, cached_s=end - middle)


def _grow_and_drop(lm: TreeCacheLM, levels: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> Callable[[], None]:
    """A run: grow each (tokens, parents) level in turn, then drop the whole tree."""

    def run() -> None:
        for tokens, parents in levels:
            lm.grow(tokens, parents)
        lm.commit(tokens[:0])

    return run


def time_forwards(
    prompt_len: int = 64,
    branching: Sequence[int] = (4, 2, 2, 1),
    draft_layers: Sequence[int] = (2, 4, 6, 10),
    repeats: int = 20,
    seed: int = 0,
) -> ForwardTimes:
    """Forward timings of the target, of early-exit drafts and of the trained draft (if its weights are
    installed) on random tokens (seeded by `seed`)."""
    model, _ = load_target()
    generator = torch.Generator().manual_seed(seed)
    vocab = model.config.vocab_size
    prompt = torch.randint(0, vocab, (prompt_len,), generator=generator)
    tree = CandidateTree.from_branching(branching)
    tokens = torch.cat([prompt[-1:], torch.randint(0, vocab, (tree.num_nodes - 1,), generator=generator)])
    root = [(tokens[:1], tree.parents[:1])]
    draft_levels = [(tokens[tree.level(d)], tree.parents[tree.level(d)]) for d in range(tree.depth)]

    def median_for(lm: TreeCacheLM, levels: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> float:
        lm.prefill(prompt)
        return median_seconds(_grow_and_drop(lm, levels), repeats)

    target = CompactLM(model)
    drafts: dict[str, TreeCacheLM] = {f"{scheme} self-draft": SelfDraft(model, scheme) for scheme in SELF_DRAFT_SCHEMES}
    drafts.update({f"early exit L={layers}": EarlyExitDraft(model, layers) for layers in draft_layers})
    if WEIGHTS_PATH.is_file():
        drafts["trained"] = TrainedDraft(model)
    return ForwardTimes(
        prompt_len=prompt_len,
        tree_nodes=tree.num_nodes,
        target_token_s=median_for(target, root),
        target_tree_s=median_for(target, [(tokens, tree.parents)]),
        draft_token_s={label: median_for(draft, root) for label, draft in drafts.items()},
        draft_levels_s={label: median_for(draft, draft_levels) for label, draft in drafts.items()},
    )


@dataclass(frozen=True)
class NodeCountTimes:
    """Median seconds of one forward over n chained nodes, per n: the target through transformers' forward
    (``before``), through `CompactLM` (``after``), and the self-drafts through `CompactLM`."""

    counts: tuple[int, ...]
    before_s: list[float]
    after_s: list[float]
    drafts_s: dict[str, list[float]]


def time_node_counts(counts: Sequence[int] = NODE_COUNTS, prompt_len: int = 64, repeats: int = 10,
                     seed: int = 0) -> NodeCountTimes:
    """Forward cost per node count, interleaved per count so that background load hits all alike."""
    model, _ = load_target()
    generator = torch.Generator().manual_seed(seed)
    prompt = torch.randint(0, model.config.vocab_size, (prompt_len,), generator=generator)
    lms = {"before": TreeLM(model), "after": CompactLM(model),
           **{f"{scheme} self-draft": SelfDraft(model, scheme) for scheme in SELF_DRAFT_SCHEMES}}
    results: dict[str, list[float]] = {name: [] for name in lms}
    for n in counts:
        chain = [(torch.cat([prompt[-1:], torch.randint(0, 1000, (n - 1,), generator=generator)]),
                  torch.arange(-1, n - 1))]
        for name, lm in lms.items():
            lm.prefill(prompt)
            results[name].append(median_seconds(_grow_and_drop(lm, chain), repeats))
    return NodeCountTimes(tuple(counts), results.pop("before"), results.pop("after"), results)
