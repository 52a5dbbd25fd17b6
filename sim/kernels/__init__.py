"""Batched step statistics of each supported verifier (closed form, or tuple chains).

``step_stats(name, batch, k, rng)`` returns a ``StepStats`` for any verifier in ``SUPPORTED``. The
verifiers whose residual does not depend on the candidates (rrs, spectr, topk, resispec) are exact
closed forms; rrs_wor and resispec_paper enumerate candidate tuples where there are few and
otherwise sample them (``MonteCarlo``), always integrating the verification randomness out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from resispec.validation import as_count
from resispec.verifiers import get_verifier
from sim.batch import PairBatch
from sim.kernels.closed_form import resispec_stats, rrs_stats, spectr_stats, topk_stats
from sim.kernels.tuple_chains import CHUNK_ELEMENTS, candidate_tuples, chain_stats, paper_chain, rrs_wor_chain
from sim.steps import StepStats, concatenate

CLOSED_FORM = {"rrs": rrs_stats, "spectr": spectr_stats, "topk": topk_stats, "resispec": resispec_stats}
TUPLE_CHAINS = {"rrs_wor": rrs_wor_chain, "resispec_paper": paper_chain}
SUPPORTED = ("rrs", "rrs_wor", "spectr", "topk", "resispec", "resispec_paper")
"""Verifiers the simulator runs (the core's exact verifiers with more than one candidate, and the
published rule as the biased control)."""
K_INDEPENDENT = frozenset({"rrs", "rrs_wor", "topk", "resispec_paper"})
"""Verifiers whose rule does not depend on k: their statistics at k' < k are the first k' steps of
those at k (``StepStats.truncated``). spectr's rate and resispec's schedule depend on k."""


@dataclass(frozen=True)
class MonteCarlo:
    """Tuple enumeration / sampling settings: enumerate a pair's tuples when there are at most
    ``enumeration_limit``, else draw ``samples`` tuples."""

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


def step_stats(verifier: str, batch: PairBatch, k: int, rng: np.random.Generator | None = None,
               monte_carlo: MonteCarlo = MonteCarlo()) -> StepStats:
    """Step statistics of ``verifier`` at k candidates on every pair of ``batch``.

    ``rng`` is needed only where tuples are sampled (rrs_wor, resispec_paper).
    """
    (verifier,) = check_verifiers([verifier])
    k = as_count(k)
    if verifier in CLOSED_FORM:
        rows = max(1, CHUNK_ELEMENTS // batch.vocab_size)
        kernel = CLOSED_FORM[verifier]
        return concatenate([kernel(_rows(batch, start, rows), k) for start in range(0, len(batch), rows)])
    if rng is None:
        raise ValueError(f"rng: {verifier} may sample candidate tuples, so it needs a numpy Generator")
    drafting = get_verifier(verifier).drafting
    tuples = candidate_tuples(batch, k, drafting, monte_carlo.samples, monte_carlo.enumeration_limit, rng)
    return chain_stats(verifier, TUPLE_CHAINS[verifier], batch, tuples, k, monte_carlo.samples)


def _rows(batch: PairBatch, start: int, count: int) -> PairBatch:
    rows = slice(start, start + count)
    return PairBatch(batch.p[rows], batch.q[rows], batch.chain[rows], batch.position[rows], batch.source)
