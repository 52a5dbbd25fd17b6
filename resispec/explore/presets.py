"""Starting pairs for the explorer: the counterexample, the simulator's synthetic families, logged rows.

Each preset returns ``(p, q, labels)`` over at most ``MAX_VOCAB`` tokens. The synthetic ones are one
pair of the simulator's families (``resispec.sim.parse_source(spec).sample(1, default_rng(seed))``); a logged
row is a row of the shipped SmolLM2 sample cut to its ``V - 1`` tokens of largest ``p + q`` plus one
tail bucket holding the rest of both distributions (``resispec.formats.pairs.shrink``, then the merged tail).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from resispec.explore.model import MAX_VOCAB
from resispec.formats.pairs import LoggedPairs, read_logged, shrink
from resispec.sim import parse_source
from resispec.sim.batch import SAMPLE_PATH, PairBatch
from resispec.suite import get_suite

Preset = tuple[np.ndarray, np.ndarray, tuple[str, ...]]
TAIL_LABEL = "(tail)"


def counterexample() -> Preset:
    """p = (.4, .3, .3), q = (.6, .3, .1): the published rule's bias shows at k = 1 (its law is
    (.40, .48, .12)), docs/verifiers.md."""
    (pair,) = [pair for pair in get_suite("standard") if pair.name == "counterexample"]
    return pair.p, pair.q, ()


def synthetic(spec: str, seed: int) -> Preset:
    """One pair of the simulator's family ``spec`` (e.g. ``dirichlet:alpha=1,V=8``), drawn with ``seed``."""
    batch = parse_source(spec).sample(1, np.random.default_rng(seed))
    if batch.vocab_size > MAX_VOCAB:
        raise ValueError(f"V: the explorer shows at most {MAX_VOCAB} tokens, got {batch.vocab_size}")
    return batch.p[0], batch.q[0], ()


def dirichlet(alpha: float, vocab: int, seed: int) -> Preset:
    """``p, q ~ Dir(alpha 1_V)`` independently."""
    return synthetic(f"dirichlet:alpha={alpha},V={vocab}", seed)


def zipf(s: float, vocab: int, seed: int) -> Preset:
    """p Zipf with exponent s over permuted ids; q permutes p's top half (the family's ``head``)."""
    return synthetic(f"zipf:s={s},V={vocab},head={max(1, vocab // 2)}", seed)


def llm_like(temperature: float, top_k: int, vocab: int, seed: int) -> Preset:
    """The simulator's ``llm`` family at logit scale ``3 / temperature`` (its scale 3 is temperature 1),
    draft logits perturbed by ``N(0, 1)``, both cut to their top-k tokens (0: no cut)."""
    if not temperature > 0:
        raise ValueError(f"temperature: must be > 0, got {temperature}")
    cut = f",top_k={top_k}" if top_k else ""
    return synthetic(f"llm:V={vocab},scale={3.0 / temperature:.6g},sigma=1{cut}", seed)


@lru_cache(maxsize=1)
def _logged_sample() -> LoggedPairs:
    return read_logged(SAMPLE_PATH)


def logged_rows() -> int:
    """How many rows the shipped sample has."""
    return len(_logged_sample())


def logged_row(row: int, vocab: int, decode=None) -> Preset:
    """Row ``row`` of the shipped SmolLM2 sample over its ``vocab - 1`` tokens of largest ``p + q`` and a
    tail bucket; ``decode(ids) -> list[str]`` labels the kept tokens (default: their ids)."""
    sample = _logged_sample()
    if not 0 <= row < len(sample):
        raise ValueError(f"row: the sample has rows 0..{len(sample) - 1}, got {row}")
    if not 2 <= vocab <= MAX_VOCAB:
        raise ValueError(f"V: expected 2..{MAX_VOCAB} (tokens plus the tail bucket), got {vocab}")
    cut = shrink(sample, row + 1, vocab - 1)
    batch = PairBatch.from_logged(cut, tail="merge")
    ids = [int(token) for token in cut.token_ids[row]]
    names = decode(ids) if decode else [f"#{token}" for token in ids]
    return batch.p[row], batch.q[row], (*names, TAIL_LABEL)
