"""The two explorations behind ``resispec sim``: drift curves at one k, and verifiers compared over k.

``run_drift`` and ``run_compare`` sample each source's pairs once (seeded), run every verifier's
batched kernel at every k needed, compute the optima, and return results that turn into JSON
records, CSV rows and plots (``resispec.sim.report``). Randomness: a source's pairs depend only on its spec,
``pairs`` and ``seed``; each verifier's Monte Carlo stream only on ``seed`` and its name, so adding
a verifier to a run does not change another's numbers. Verifiers whose rule does not depend on k
run once at the largest k; smaller k are its first steps (the same draws).

Besides the requested verifiers, every evaluation measures resispec (the sequential optimum, and the
reference of the per-pair gains) and the rejection-sampling baseline of each requested drafting
scheme (rrs for i.i.d., rrs_wor for WOR), against which the share of the gap to the optimum is read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from resispec.formats.stats import Estimate, ratio_estimate
from resispec.sim.batch import PairBatch
from resispec.sim.kernels import SUPPORTED, MonteCarlo, check_verifiers, step_stats
from resispec.sim.optima import Optima, WorSettings, optima
from resispec.sim.sources import parse_source
from resispec.sim.steps import StepStats
from resispec.sim.tree import analytic_tokens, replay_tokens, tree_nodes
from resispec.validation import as_count
from resispec.verifiers import VERIFIERS

DEFAULT_SOURCES = ("logged:sample",)
DEFAULT_VERIFIERS = ("rrs", "rrs_wor", "spectr", "resispec", "pooled", "resispec_wor", "pooled_wor", "resispec_paper")
BASELINES = {"iid": "rrs", "wor": "rrs_wor"}
"""The rejection-sampling verifier of each drafting scheme: the start of the gap to the optimum."""
MIN_GAP = 1e-9
"""Smallest mean baseline-to-optimum gap whose recovered share is reported."""
DEFAULT_DRIFT_K = 8
DEFAULT_KS = (1, 2, 4, 8)
DEFAULT_TREE = (4, 2, 2, 1)
DEFAULT_PAIRS = 200

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Settings:
    """How many pairs per source, the seed, the kernels' Monte Carlo settings and the WOR optima's limits."""

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
    """One source's pairs, every measured verifier's ``StepStats`` by k (the requested ones, resispec
    and the baselines), and the optima by k."""

    source: str
    batch: PairBatch
    stats: dict[str, dict[int, StepStats]]
    optima: dict[int, Optima]

    def record(self, verifier: str, k: int) -> dict:
        """Mean acceptance of ``verifier`` at k, every optimum, the ratios to them, the per-pair gain
        over resispec and the share of the baseline-to-optimum gap it recovers."""
        stats, best = self.stats[verifier][k], self.optima[k]
        drafting = VERIFIERS[verifier].drafting
        acceptance = stats.mean_acceptance()
        optimum = float(best.for_drafting(drafting).mean())
        means = {"iid": float(best.iid.mean()), "sequential": float(best.sequential.mean()),
                 "wor": float(best.wor.mean()), "sequential_wor": float(best.sequential_wor.mean())}
        gain = stats.acceptance - self.stats["resispec"][k].acceptance
        row = int(np.argmax(gain))
        return {
            "source": self.source, "verifier": verifier, "drafting": drafting,
            "biased": not VERIFIERS[verifier].claims_exact, "sequential": not VERIFIERS[verifier].single_step,
            "k": k, "pairs": len(self.batch), "method": stats.method,
            "acceptance": acceptance.value, "acceptance_ci": acceptance.to_list(),
            "iid_optimum": means["iid"], "sequential_optimum": means["sequential"],
            "wor_optimum": means["wor"], "wor_optimum_method": best.wor_method,
            "wor_optimum_error": float(best.wor_error.max()), "sequential_wor_optimum": means["sequential_wor"],
            "sequential_wor_optimum_method": best.sequential_wor_method,
            "topk_optimum": float(best.topk.mean()), "optimum_kind": drafting, "optimum": optimum,
            "ratio_to_optimum": _ratio(acceptance.value, optimum),
            **{f"ratio_to_{kind}_optimum": _ratio(acceptance.value, value) for kind, value in means.items()},
            "gain_over_resispec": float(gain.mean()), "max_gain_over_resispec": float(gain[row]),
            "max_gain_row": row, **self._shares(verifier, k),
        }

    def _shares(self, verifier: str, k: int) -> dict:
        """``(acceptance - baseline) / (optimum - baseline)``, pooled over pairs with a delta-method 95 %
        interval, for the optimum of the drafting scheme and its sequential optimum. NaN without a
        baseline, where the optimum is not computed, or where the mean gap is below ``MIN_GAP`` (e.g.
        k = 1, where every exact verifier is the baseline)."""
        drafting = VERIFIERS[verifier].drafting
        baseline = BASELINES.get(drafting)
        shares: dict = {"baseline": baseline}
        for key, optimum in (("share_of_gap", self.optima[k].for_drafting(drafting)),
                             ("share_of_sequential_gap", self.optima[k].sequential_for(drafting))):
            share = Estimate(float("nan"), float("nan"), float("nan"))
            if baseline is not None:
                gap = optimum - self.stats[baseline][k].acceptance
                if np.mean(gap) > MIN_GAP:  # False for NaN
                    share = ratio_estimate(self.stats[verifier][k].acceptance - self.stats[baseline][k].acceptance, gap)
            shares[key], shares[f"{key}_ci"] = share.value, share.to_list()
        return shares

    def gaps(self, verifier: str, k: int) -> np.ndarray:
        """Per-pair gap to the optimum of the verifier's drafting: optimum - acceptance."""
        return self.optima[k].for_drafting(VERIFIERS[verifier].drafting) - self.stats[verifier][k].acceptance


def _stream(settings: Settings, verifier: str) -> np.random.Generator:
    """The Monte Carlo stream of a verifier (seeded by the seed and the verifier's name)."""
    return np.random.default_rng([settings.seed, *verifier.encode()])


def _ratio(value: float, optimum: float) -> float:
    return value / optimum if optimum > 0 else float("nan")


def measured_verifiers(verifiers: list[str]) -> list[str]:
    """The requested verifiers, resispec, and the baseline of each requested drafting scheme."""
    baselines = {BASELINES[VERIFIERS[name].drafting] for name in verifiers if VERIFIERS[name].drafting in BASELINES}
    return sorted(set(verifiers) | {"resispec"} | baselines, key=SUPPORTED.index)


def stats_by_k(name: str, batch: PairBatch, ks: list[int], settings: Settings,
               progress: Progress | None = None) -> dict[int, StepStats]:
    """``name``'s step statistics on ``batch`` at every k of ``ks`` (one run at the largest k, truncated, where
    the verifier's statistics at k' < k are the first k' steps of those at k)."""
    nested = step_stats(name, batch, max(ks), _stream(settings, name), settings.monte_carlo) \
        if VERIFIERS[name].k_independent else None
    stats = {}
    for k in ks:
        stats[k] = nested.truncated(k) if nested else step_stats(name, batch, k, _stream(settings, name),
                                                                   settings.monte_carlo)
        if progress:
            progress(f"{batch.source}: {name} k={k}: acceptance {stats[k].acceptance.mean():.4f} "
                     f"over {len(batch)} pairs ({stats[k].method})")
    return stats


def acceptance_curves(batch: PairBatch, verifiers: list[str], max_k: int, settings: Settings,
                      progress: Progress | None = None) -> dict[str, list[float]]:
    """``A(1..max_k)`` per verifier: its mean exact acceptance over ``batch`` at k candidates (what a tree's node
    with k children accepts, `resispec.engine.decode.tree_search`). ``sps`` (one candidate only) gets ``A(1)``."""
    curves = {}
    for name in verifiers:
        if VERIFIERS[name].max_k == 1:  # sps: its one-candidate acceptance is every sps-at-k = 1 verifier's
            curves[name] = [float(np.minimum(batch.p, batch.q).sum(axis=1).mean())]
            continue
        stats = stats_by_k(name, batch, list(range(1, max_k + 1)), settings, progress)
        curves[name] = [float(stats[k].acceptance.mean()) for k in range(1, max_k + 1)]
    return curves


def evaluate(spec: str, verifiers: list[str], ks: list[int], settings: Settings,
             progress: Progress | None = None) -> Evaluation:
    """Sample ``settings.pairs`` pairs of the source ``spec`` and measure every verifier at every k."""
    batch = parse_source(spec).sample(settings.pairs, np.random.default_rng(settings.seed))
    stats = {name: stats_by_k(name, batch, ks, settings, progress) for name in measured_verifiers(verifiers)}
    best = optima(batch, ks, {k: stats["resispec"][k].acceptance for k in ks}, settings.wor)
    if progress:
        progress(f"{batch.source}: optima done (alpha*-WOR: {best[max(ks)].wor_method}; "
                 f"sequential WOR: {best[max(ks)].sequential_wor_method})")
    return Evaluation(batch.source, batch, stats, best)


@dataclass(frozen=True)
class DriftResult:
    """Drift curves of each verifier at one k, for each source."""

    k: int
    verifiers: list[str]
    evaluations: list[Evaluation]

    def records(self) -> list[dict]:
        """One record per (source, verifier): acceptance, optima, and the per-step curves (one step for
        a verifier that is not sequential: pooled's selection, then its accept test)."""
        records = []
        for evaluation in self.evaluations:
            for name in self.verifiers:
                stats = evaluation.stats[name][self.k]
                steps = 1 if VERIFIERS[name].single_step else self.k
                curve = [
                    {"step": i + 1, "conditional_acceptance": accept.value,
                     "conditional_acceptance_ci": accept.to_list(), "reach": float(stats.reached[:, i].mean()),
                     "residual_tv": tv.value, "residual_tv_ci": tv.to_list()}
                    for i, (accept, tv) in enumerate(zip(stats.drift_curve()[:steps], stats.residual_curve()[:steps]))
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
              k: int = DEFAULT_DRIFT_K, settings: Settings = Settings(),
              progress: Progress | None = None) -> DriftResult:
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
