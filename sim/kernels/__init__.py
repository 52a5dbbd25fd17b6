"""Batched step statistics of each supported verifier (closed form, or tuple chains).

``step_stats(name, batch, k, rng)`` returns a ``StepStats`` for any verifier in ``SUPPORTED``. The
verifiers whose residual does not depend on the candidates (rrs, spectr, topk, resispec), pooled, and
resispec_wor at k <= 2 are exact closed forms; rrs_wor, resispec_wor (k >= 3) and resispec_paper
enumerate candidate tuples where there are few and otherwise sample them (``MonteCarlo``), always
integrating the verification randomness out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from resispec.drafting import DRAFTING_SCHEMES
from resispec.sim.batch import PairBatch
from resispec.sim.kernels.closed_form import (
    pooled_stats,
    pooled_wor_stats,
    resispec_stats,
    resispec_wor_stats,
    rrs_stats,
    spectr_stats,
    topk_stats,
)
from resispec.sim.kernels.paths import path_stats
from resispec.sim.kernels.tuple_chains import (
    CHUNK_ELEMENTS,
    candidate_tuples,
    chain_stats,
    paper_chain,
    resispec_wor_chain,
    rrs_wor_chain,
)
from resispec.sim.kernels.wor_states import WOR_STATES
from resispec.sim.steps import StepStats, concatenate, interleave
from resispec.validation import as_count
from resispec.verifiers import VERIFIERS

CLOSED_FORM_KERNELS = {"rrs": rrs_stats, "spectr": spectr_stats, "topk": topk_stats, "resispec": resispec_stats,
                       "pooled": pooled_stats, "pooled_wor": pooled_wor_stats, "resispec_wor": resispec_wor_stats}
"""The closed-form step statistics of each verifier whose class declares ``closed_form`` (used for
``k <= closed_form_max_k``: resispec_wor's is the k = 2 plan)."""
CHAIN_KERNELS = {"rrs_wor": rrs_wor_chain, "resispec_wor": resispec_wor_chain, "resispec_paper": paper_chain}
"""The one-tuple chains of the verifiers (or the k) without a closed form: enumerated or sampled tuples."""
SUPPORTED = tuple(name for name in VERIFIERS if name in CLOSED_FORM_KERNELS or name in CHAIN_KERNELS)
"""Verifiers the simulator runs (the core's exact verifiers with more than one candidate, and the
published rule as the biased control), in the zoo's order. The class attributes say the rest:
``k_independent`` (statistics at k' < k are the first k' steps of those at k, ``StepStats.truncated``;
spectr's rate, resispec's schedule, pooled's plan and resispec_wor's last step depend on k) and
``single_step`` (one selection then one accept test: ``StepStats`` of one step, a drift curve of one point)."""


def closed_form_at(verifier: str, k: int) -> bool:
    """Whether ``verifier``'s step statistics at k candidates come in closed form (its class's facts)."""
    facts = VERIFIERS[verifier]
    return facts.closed_form and (facts.closed_form_max_k is None or k <= facts.closed_form_max_k)


@dataclass(frozen=True)
class MonteCarlo:
    """Tuple enumeration / sampling settings: enumerate a pair's tuples when there are at most
    ``enumeration_limit``, else draw ``samples`` tuples (resispec_paper) or ``samples`` rejection
    paths (the WOR verifiers, ``resispec.sim.kernels.paths``)."""

    samples: int = 128
    enumeration_limit: int = 1024

    def __post_init__(self) -> None:
        as_count(self.samples, "samples", "tuples")
        as_count(self.enumeration_limit, "enumeration_limit", "tuples")


def check_verifiers(names: list[str]) -> list[str]:
    """The names, checked against ``SUPPORTED`` (``ValueError`` listing them otherwise)."""
    for name in names:
        if name not in SUPPORTED:
            raise ValueError(f"verifiers: the simulator supports {', '.join(SUPPORTED)}; got {name!r}")
    return list(names)


def step_stats(verifier: str, batch: PairBatch, k: int,
               rng: np.random.Generator | Sequence[np.random.Generator] | None = None,
               monte_carlo: MonteCarlo = MonteCarlo()) -> StepStats:
    """Step statistics of ``verifier`` at k candidates on every pair of ``batch``.

    ``rng`` is needed only where tuples may be sampled (rrs_wor, resispec_wor at k >= 3, resispec_paper);
    pair n draws from the n-th of ``len(batch)`` children of it (``Generator.spawn``), so a pair's
    draws do not depend on the other pairs; or ``rng`` is a sequence of one Generator per pair (pair n
    draws from ``rng[n]``: streams keyed by something of the pair's own, e.g. a logged node's id). WOR pairs
    with too many tuples to enumerate take rejection paths (``resispec.sim.kernels.paths``); the others are enumerated.
    """
    (verifier,) = check_verifiers([verifier])
    k = as_count(k)
    if closed_form_at(verifier, k):
        kernel = CLOSED_FORM_KERNELS[verifier]
        rows = max(1, CHUNK_ELEMENTS // batch.vocab_size)
        return concatenate([kernel(batch.rows(slice(start, start + rows)), k)
                            for start in range(0, len(batch), rows)])
    if rng is None:
        raise ValueError(f"rng: {verifier} may sample candidate tuples, so it needs a numpy Generator")
    streams = list(rng) if isinstance(rng, Sequence) else rng.spawn(len(batch))
    if len(streams) != len(batch):
        raise ValueError(f"rng: expected one Generator per pair ({len(batch)}), got {len(streams)}")
    if verifier not in WOR_STATES:
        drafting = VERIFIERS[verifier].drafting
        tuples = candidate_tuples(batch, k, drafting, monte_carlo.samples, monte_carlo.enumeration_limit, streams)
        return chain_stats(verifier, CHAIN_KERNELS[verifier], batch, tuples, k, monte_carlo.samples)
    return _wor_stats(verifier, batch, k, streams, monte_carlo)


def _wor_stats(verifier: str, batch: PairBatch, k: int, streams: list[np.random.Generator],
               monte_carlo: MonteCarlo) -> StepStats:
    """A sequential WOR verifier: enumerated tuples where few (exact), rejection paths elsewhere."""
    scheme = DRAFTING_SCHEMES["wor"]
    listed = np.array([scheme.tuple_count(q, min(k, int(np.count_nonzero(q)))) <= monte_carlo.enumeration_limit
                       for q in batch.q])
    parts = []
    rows = np.flatnonzero(listed)
    if rows.size:
        part = batch.rows(rows)
        tuples = candidate_tuples(part, k, "wor", monte_carlo.samples, monte_carlo.enumeration_limit,
                                  [streams[n] for n in rows])
        parts.append((rows, chain_stats(verifier, CHAIN_KERNELS[verifier], part, tuples, k, monte_carlo.samples)))
    rows = np.flatnonzero(~listed)
    if rows.size:
        parts.append((rows, path_stats(verifier, batch.rows(rows), k, monte_carlo.samples, [streams[n] for n in rows])))
    return interleave(parts)
