"""The two explorations behind ``resispec sim``: drift curves at one k, and verifiers compared over k.

``run_drift`` and ``run_compare`` sample each source's pairs once (seeded), run every verifier's
batched kernel at every k needed, compute the optima, and return results that turn into JSON
records, CSV rows and plots (``sim.report``). Randomness: a source's pairs depend only on its spec,
``pairs`` and ``seed``; each verifier's Monte Carlo stream only on ``seed``, its name and k, so
adding a verifier to a run does not change another's numbers. Verifiers whose rule does not depend
on k run once at the largest k; smaller k are its first steps (the same candidate tuples).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from resispec.validation import as_count
from resispec.verifiers import VERIFIERS
from sim.batch import PairBatch
from sim.kernels import K_INDEPENDENT, SUPPORTED, MonteCarlo, check_verifiers, step_stats
from sim.optima import Optima, WorSettings, optima
from sim.sources import parse_source
from sim.steps import StepStats
from sim.tree import analytic_tokens, replay_tokens, tree_nodes

DEFAULT_SOURCES = ("logged:sample",)
DEFAULT_VERIFIERS = ("rrs", "rrs_wor", "spectr", "resispec", "resispec_paper")
DEFAULT_DRIFT_K = 8
DEFAULT_KS = (1, 2, 4, 8)
DEFAULT_TREE = (4, 2, 2, 1)
DEFAULT_PAIRS = 200

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Settings:
    """How many pairs per source, the seed, and the Monte Carlo settings of kernels and WOR optimum."""

    pairs: int = DEFAULT_PAIRS
    seed: int = 0
    monte_carlo: MonteCarlo = field(default_factory=MonteCarlo)
    wor: WorSettings = field(default_factory=WorSettings)

    def __post_init__(self) -> None:
        as_count(self.pairs, "pairs", "pairs")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ValueError(f"seed: expected a non-negative integer, got {self.seed!r}")


@dataclass(frozen=True)
class Evaluation:
    """One source's pairs, every verifier's ``StepStats`` by k, and the optima by k."""

    source: str
    batch: PairBatch
    stats: dict[str, dict[int, StepStats]]
    optima: dict[int, Optima]

    def record(self, verifier: str, k: int) -> dict:
        """Mean acceptance of ``verifier`` at k, every optimum, and the ratios to them."""
        stats, best = self.stats[verifier][k], self.optima[k]
        drafting = VERIFIERS[verifier].drafting
        acceptance = stats.mean_acceptance()
        wor = best.wor_estimate()
        optimum = float(best.for_drafting(drafting).mean())
        means = {"iid": float(best.iid.mean()), "sequential": float(best.sequential.mean()), "wor": wor.value}
        return {
            "source": self.source, "verifier": verifier, "drafting": drafting,
            "biased": not VERIFIERS[verifier].claims_exact, "k": k, "pairs": len(self.batch),
            "method": stats.method, "acceptance": acceptance.value, "acceptance_ci": acceptance.to_list(),
            "iid_optimum": means["iid"], "sequential_optimum": means["sequential"], "wor_optimum": wor.value,
            "wor_optimum_ci": wor.to_list(), "wor_optimum_method": best.wor_method,
            "topk_optimum": float(best.topk.mean()), "optimum_kind": drafting, "optimum": optimum,
            "ratio_to_optimum": _ratio(acceptance.value, optimum),
            **{f"ratio_to_{kind}_optimum": _ratio(acceptance.value, value) for kind, value in means.items()},
        }

    def gaps(self, verifier: str, k: int) -> np.ndarray:
        """Per-pair gap to the optimum of the verifier's drafting: optimum - acceptance."""
        return self.optima[k].for_drafting(VERIFIERS[verifier].drafting) - self.stats[verifier][k].acceptance


def _stream(settings: "Settings", verifier: str, k: int) -> np.random.Generator:
    """The Monte Carlo stream of one verifier at k (independent of which other verifiers run)."""
    return np.random.default_rng([settings.seed, 1 + SUPPORTED.index(verifier), k])


def _ratio(value: float, optimum: float) -> float:
    return value / optimum if optimum > 0 else float("nan")


def evaluate(spec: str, verifiers: list[str], ks: list[int], settings: Settings,
             progress: Progress | None = None) -> Evaluation:
    """Sample ``settings.pairs`` pairs of the source ``spec`` and measure every verifier at every k."""
    batch = parse_source(spec).sample(settings.pairs, np.random.default_rng(settings.seed))
    measured = sorted(set(verifiers) | {"resispec"}, key=SUPPORTED.index)  # resispec = sequential optimum
    stats: dict[str, dict[int, StepStats]] = {name: {} for name in measured}
    for name in measured:
        nested = step_stats(name, batch, max(ks), _stream(settings, name, max(ks)), settings.monte_carlo) \
            if name in K_INDEPENDENT else None
        for k in ks:
            stats[name][k] = nested.truncated(k) if nested else step_stats(
                name, batch, k, _stream(settings, name, k), settings.monte_carlo)
            if progress:
                progress(f"{batch.source}: {name} k={k}: acceptance {stats[name][k].acceptance.mean():.4f} "
                         f"over {len(batch)} pairs ({stats[name][k].method})")
    sequential = {k: stats["resispec"][k].acceptance for k in ks}
    best = optima(batch, ks, sequential, np.random.default_rng([settings.seed, 0]), settings.wor)
    if progress:
        progress(f"{batch.source}: optima done (WOR: {best[max(ks)].wor_method})")
    kept = {name: stats[name] for name in verifiers}
    return Evaluation(batch.source, batch, kept, best)


@dataclass(frozen=True)
class DriftResult:
    """Drift curves of each verifier at one k, for each source."""

    k: int
    verifiers: list[str]
    evaluations: list[Evaluation]

    def records(self) -> list[dict]:
        """One record per (source, verifier): acceptance, optima, and the per-step curves."""
        records = []
        for evaluation in self.evaluations:
            for name in self.verifiers:
                stats = evaluation.stats[name][self.k]
                curve = [
                    {"step": i + 1, "conditional_acceptance": accept.value, "conditional_acceptance_ci": accept.to_list(),
                     "reach": float(stats.reached[:, i].mean()), "residual_tv": tv.value, "residual_tv_ci": tv.to_list()}
                    for i, (accept, tv) in enumerate(zip(stats.drift_curve(), stats.residual_curve()))
                ]
                records.append({**evaluation.record(name, self.k), "curve": curve})
        return records


@dataclass(frozen=True)
class CompareResult:
    """Acceptance of each verifier over k against the optima, and tokens per forward of a tree."""

    ks: list[int]
    shape: tuple[int, ...]
    verifiers: list[str]
    evaluations: list[Evaluation]

    def records(self) -> list[dict]:
        return [evaluation.record(name, k) for evaluation in self.evaluations
                for name in self.verifiers for k in self.ks]

    def tree_records(self) -> list[dict]:
        """Per (source, verifier): accepted tokens per forward, analytic and replayed over chains."""
        records = []
        for evaluation in self.evaluations:
            for name in self.verifiers:
                acceptance = {k: evaluation.stats[name][k].acceptance for k in set(self.shape)}
                analytic = analytic_tokens({k: float(values.mean()) for k, values in acceptance.items()}, self.shape)
                replay = replay_tokens(acceptance, self.shape, evaluation.batch)
                records.append({
                    "source": evaluation.source, "verifier": name, "biased": not VERIFIERS[name].claims_exact,
                    "shape": list(self.shape), "nodes": tree_nodes(self.shape),
                    "accepted_analytic": analytic, "accepted_replay": replay.accepted.value,
                    "accepted_replay_ci": replay.accepted.to_list(), "replay_starts": replay.starts,
                    "tokens_per_forward_analytic": analytic + 1.0,
                    "tokens_per_forward_replay": replay.accepted.value + 1.0,
                })
        return records


def _check(sources: Sequence[str], verifiers: Sequence[str]) -> tuple[list[str], list[str]]:
    if not sources:
        raise ValueError("sources: give at least one source")
    if not verifiers:
        raise ValueError("verifiers: give at least one verifier")
    return list(sources), check_verifiers(list(dict.fromkeys(verifiers)))


def run_drift(sources: Sequence[str] = DEFAULT_SOURCES, verifiers: Sequence[str] = DEFAULT_VERIFIERS,
              k: int = DEFAULT_DRIFT_K, settings: Settings = Settings(), progress: Progress | None = None) -> DriftResult:
    """Drift curves (conditional acceptance and residual TV by candidate index) at k."""
    sources, verifiers = _check(sources, verifiers)
    k = as_count(k)
    return DriftResult(k, verifiers, [evaluate(spec, verifiers, [k], settings, progress) for spec in sources])


def run_compare(sources: Sequence[str] = DEFAULT_SOURCES, verifiers: Sequence[str] = DEFAULT_VERIFIERS,
                ks: Sequence[int] = DEFAULT_KS, shape: tuple[int, ...] = DEFAULT_TREE,
                settings: Settings = Settings(), progress: Progress | None = None) -> CompareResult:
    """Acceptance over k against the optima, plus tokens per forward for the tree ``shape``."""
    sources, verifiers = _check(sources, verifiers)
    ks = sorted({as_count(k) for k in ks})
    needed = sorted(set(ks) | set(shape))
    return CompareResult(ks, tuple(shape), verifiers,
                         [evaluate(spec, verifiers, needed, settings, progress) for spec in sources])
