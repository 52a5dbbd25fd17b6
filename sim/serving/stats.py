"""Per-shard statistics of logged nodes that merge exactly: integer counts, histograms and fixed-point sums.

For every node, grouped by (verifier, k), on the node's (M + 1)-token pair (kept ids, then the tail
bucket; rows renormalised):

- **randomized PIT** of the emitted category against p, with the core's ``randomized_pit``, in two
  category orders: as stored (kept ids, tail last) and by ascending ratio ``p/q`` (ties by column),
  the second sensitive to a verifier that over- or under-emits where the draft over-proposes. The
  uniform is ``node_uniforms(node_id, seed)``. Under exactness both are Uniform(0, 1) and
  independent across nodes; they are counted in ``PIT_BINS`` equal-width bins.
- **impossible emissions**: nodes whose emitted category has p = 0 (no exact verifier emits one).
- **observed decisions**: the count of nodes whose accepted index is i (i < k), and of residual
  emissions (column k).
- **the verifier's exact step law** on the pair (``resispec.sim.kernels.step_stats``, the simulator's kernels:
  accepted, reached and drift per step), summed with the second moments the delta-method intervals
  need: ``sum a_i, r_i, d_i, a_i^2, r_i^2, a_i r_i, d_i^2, d_i r_i``; its acceptance ``alpha_n = sum_i
  a_i`` as ``sum alpha_n`` and ``sum alpha_n^2``. Verifiers the simulator does not run get their
  acceptance from the core (``Verifier.acceptance``) on the nodes whose candidate tuples number at
  most ``enumeration_limit`` (the report says where it was not computed), and no step law.
- **the optimum of the verifier's drafting scheme** (``resispec.bounds.optimal_acceptance``: alpha*
  for i.i.d., ``p(top-k of q)`` for top-k; ``resispec.sim.optima.alpha_star_wor`` for WOR), summed.

Every sum is fixed-point (``resispec.sim.serving.exact``) and every per-node value depends only on that node's
row (and its id), so ``merge`` is exact, associative and commutative: the totals do not depend on the
sharding, the row-group size or the order in which shards finish.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from resispec.audit import randomized_pit
from resispec.bounds import optimal_acceptance
from resispec.formats.nodes import NodeBatch
from resispec.sim.batch import PairBatch
from resispec.sim.kernels import SUPPORTED, MonteCarlo, closed_form_at, step_stats
from resispec.sim.optima import WorSettings, alpha_star_wor, support_capped
from resispec.sim.serving.exact import fixed_sum, fixed_sums, node_uniforms
from resispec.verifiers import VERIFIERS, get_verifier

PIT_BINS = 20 * 4096
"""Fine PIT bins: a multiple of the core audit's 20 chi-square bins, so its bins are unions of them;
bin centres are within ``1/(2 PIT_BINS)`` (6e-6) of the values, far below the KS test's resolution."""
STEP_SUMS = ("accepted", "reached", "drift", "accepted_sq", "reached_sq", "accepted_reached", "drift_sq",
             "drift_reached")


@dataclass(frozen=True)
class AuditSettings:
    """``seed`` keys every node's PIT uniform (and Monte Carlo streams); ``monte_carlo`` as in the
    simulator (verifiers whose step law samples tuples); ``optimum`` False skips the optima."""

    seed: int = 0
    monte_carlo: MonteCarlo = field(default_factory=MonteCarlo)
    wor: WorSettings = field(default_factory=WorSettings)
    optimum: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ValueError(f"seed: expected a non-negative integer, got {self.seed!r}")


@dataclass
class GroupTally:
    """The mergeable statistics of the nodes of one (verifier, k); see the module docstring."""

    verifier: str
    k: int
    nodes: int = 0
    observed: np.ndarray = field(init=False)
    pit: np.ndarray = field(init=False)
    pit_ratio: np.ndarray = field(init=False)
    steps: dict[str, list[int]] = field(init=False)
    acceptance: int = 0
    acceptance_sq: int = 0
    law_nodes: int = 0
    step_law: bool = False
    monte_carlo: bool = False
    optimum: int = 0
    optimum_nodes: int = 0
    impossible: int = 0

    def __post_init__(self) -> None:
        self.observed = np.zeros(self.k + 1, dtype=np.int64)
        self.pit = np.zeros(PIT_BINS, dtype=np.int64)
        self.pit_ratio = np.zeros(PIT_BINS, dtype=np.int64)
        self.steps = {name: [0] * self.k for name in STEP_SUMS}

    def merge(self, other: GroupTally) -> None:
        """Add ``other`` (same verifier and k) into this tally."""
        self.nodes += other.nodes
        self.observed += other.observed
        self.pit += other.pit
        self.pit_ratio += other.pit_ratio
        for name in STEP_SUMS:
            self.steps[name] = [a + b for a, b in zip(self.steps[name], other.steps[name])]
        for name in ("acceptance", "acceptance_sq", "law_nodes", "optimum", "optimum_nodes", "impossible"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.step_law |= other.step_law
        self.monte_carlo |= other.monte_carlo


@dataclass
class ShardStats:
    """Tallies by (verifier, k), the rows read, and ``(origin, problem)`` of every skipped row group."""

    groups: dict[tuple[str, int], GroupTally] = field(default_factory=dict)
    rows: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def merge(self, other: ShardStats) -> ShardStats:
        """Add ``other`` into these statistics (returns self)."""
        for key, tally in other.groups.items():
            if key in self.groups:
                self.groups[key].merge(tally)
            else:
                self.groups[key] = GroupTally(tally.verifier, tally.k)
                self.groups[key].merge(tally)
        self.rows += other.rows
        self.skipped = sorted(self.skipped + other.skipped)
        return self


def _histogram(values: np.ndarray) -> np.ndarray:
    return np.bincount(np.minimum((values * PIT_BINS).astype(np.int64), PIT_BINS - 1), minlength=PIT_BINS)


def pit_values(p: np.ndarray, q: np.ndarray, emitted: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Randomized PIT of each row's emitted column (core ``randomized_pit``): in stored column order,
    and with the columns sorted by ascending ``p/q`` (``q = 0`` last, ties by column)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(q > 0, p / np.where(q > 0, q, 1.0), np.inf)
    order = np.argsort(ratio, axis=1, kind="stable")
    rank = np.argsort(order, axis=1, kind="stable")
    rows = range(p.shape[0])
    stored = np.array([randomized_pit(p[n], int(emitted[n]), float(u[n])) for n in rows])
    by_ratio = np.array([randomized_pit(p[n, order[n]], int(rank[n, emitted[n]]), float(u[n])) for n in rows])
    return stored, by_ratio


def _needs_streams(verifier: str, k: int) -> bool:
    return not closed_form_at(verifier, k)


def _add_law(tally: GroupTally, p: np.ndarray, q: np.ndarray, node_ids: np.ndarray, settings: AuditSettings) -> None:
    """The verifier's exact step law (or acceptance) on each pair, added to ``tally``."""
    name, k = tally.verifier, tally.k
    if name in SUPPORTED:
        streams = [np.random.default_rng([settings.seed, int(node)]) for node in node_ids] \
            if _needs_streams(name, k) else None
        stats = step_stats(name, PairBatch.from_arrays(p, q), k, streams, settings.monte_carlo)
        accepted, reached, drift = stats.accepted, stats.reached, stats.drift
        terms = {"accepted": accepted, "reached": reached, "drift": drift, "accepted_sq": accepted**2,
                 "reached_sq": reached**2, "accepted_reached": accepted * reached, "drift_sq": drift**2,
                 "drift_reached": drift * reached}
        for key, values in terms.items():
            tally.steps[key] = [a + b for a, b in zip(tally.steps[key], fixed_sums(values))]
        acceptance = stats.acceptance
        tally.step_law = True
        tally.monte_carlo |= not stats.exact
    else:
        verifier = get_verifier(name)
        computable = [n for n in range(p.shape[0])
                      if verifier.scheme.tuple_count(q[n], k) <= settings.monte_carlo.enumeration_limit]
        if not computable:
            return
        acceptance = np.array([verifier.acceptance(p[n], q[n], k) for n in computable])
        tally.law_nodes -= p.shape[0] - len(computable)
    tally.law_nodes += p.shape[0]
    tally.acceptance += fixed_sum(acceptance)
    tally.acceptance_sq += fixed_sum(acceptance**2)


OPTIMA = {
    "iid": lambda p, q, k, settings: optimal_acceptance(p, q, k),
    "topk": lambda p, q, k, settings: optimal_acceptance(p, q, support_capped(q, k), "topk"),
    "wor": lambda p, q, k, settings: alpha_star_wor(p, q, k, settings.wor)[0],
}
"""The optimum of each drafting scheme for one pair; a scheme not listed gets no bound test."""


def batch_stats(batch: NodeBatch, settings: AuditSettings = AuditSettings()) -> ShardStats:
    """The statistics of one checked row group."""
    result = ShardStats(rows=batch.size)
    u = node_uniforms(batch.node_id, settings.seed)
    for k, rows_k in batch.rows_by_k.items():
        for name in sorted(set(batch.verifier[rows_k])):
            chosen = batch.verifier[rows_k] == name
            rows = rows_k[chosen]
            p, q = batch.p[rows], batch.q[rows]
            tally = GroupTally(name, k, nodes=rows.size)
            emitted = batch.emitted_column[rows]
            tally.impossible = int((p[np.arange(rows.size), emitted] == 0).sum())
            stored, by_ratio = pit_values(p, q, emitted, u[rows])
            tally.pit += _histogram(stored)
            tally.pit_ratio += _histogram(by_ratio)
            index = batch.accepted_index[rows]
            tally.observed += np.bincount(np.where(index < 0, k, index), minlength=k + 1)
            _add_law(tally, p, q, batch.node_id[rows], settings)
            bound = OPTIMA.get(VERIFIERS[name].drafting)
            if settings.optimum and bound is not None:
                optimum = np.array([bound(p[n], q[n], k, settings) for n in range(rows.size)])
                tally.optimum += fixed_sum(optimum)
                tally.optimum_nodes += rows.size
            result.groups[(name, k)] = tally
    return result


def single_step(verifier: str) -> bool:
    """Whether the verifier is one selection then one test (its step law has one step)."""
    return VERIFIERS[verifier].single_step
