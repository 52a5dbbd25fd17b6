"""The acceptance optima each verifier is measured against, per pair of a batch.

- i.i.d. optimum ``alpha* = 1 - max_i (Q_i^k - P_i)`` over ratio prefixes (``resispec.bounds``): no
  exact verifier of i.i.d. candidates accepts more.
- sequential optimum: the best sequential verifier of i.i.d. candidates, resispec's acceptance
  ``g(T_1)`` (the optimum of ``resispec.bounds.sequential_optimum_lp``; proven in theory/).
- top-k optimum: ``p(top-k of q)`` (``resispec.bounds``), reached by the topk verifier.
- WOR optimum ``min_H [p(H) + 1 - P(all k WOR draws fall in H)]``:
  exact by the transport LP (``resispec.bounds.optimal_acceptance_lp``) when there are at most
  ``WorSettings.lp_limit`` WOR tuples; otherwise a Monte Carlo *prefix-cut* estimate. Every set H gives
  an upper bound (a cut of the transport network), and on every small instance where the LP was
  solved the best H was a prefix of the tokens sorted by ``p/q``, so with
  ``F(i) = P(max ratio rank of the k draws < i)`` the optimum is ``min_i [P_i + 1 - F(i)]``. Two
  independent samples of ``WorSettings.samples`` tuples estimate F: the first picks the cut ``i*``,
  the second evaluates it, ``high = P_{i*} + 1 - F_2(i*)`` (unbiased for a valid upper bound; the
  point estimate), and ``low = min_i [P_i + 1 - F_2(i)]`` (biased low, since ``E[min] <= min E``).
  The Monte Carlo 95 % interval of the mean over the batch's pairs runs from
  ``mean(low) - 1.96 se`` to ``mean(high) + 1.96 se`` (binomial variances ``F (1 - F) / samples`` at
  the cuts used, summed over pairs): its upper end is a valid bound, its lower end assumes the best
  cut is a ratio prefix (observed, not proven). It covers the Monte Carlo error only, not the choice
  of pairs. Draws for all k come from one Gumbel-top-k_max sample (the top k of a Gumbel-top-k_max
  draw is a Gumbel-top-k draw).
WOR and top-k drafting cannot propose more distinct tokens than q's support: k is capped there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from resispec.bounds import optimal_acceptance, optimal_acceptance_lp
from resispec.drafting import DRAFTING_SCHEMES
from resispec.ratio_profile import RatioProfile
from resispec.validation import as_count
from sim.batch import PairBatch
from sim.kernels.tuple_chains import draw_tuples
from sim.stats import Z95, Estimate


@dataclass(frozen=True)
class WorSettings:
    """Exact LP up to ``lp_limit`` WOR tuples per pair; else two prefix-cut samples of ``samples`` tuples."""

    lp_limit: int = 2000
    samples: int = 512

    def __post_init__(self) -> None:
        as_count(self.lp_limit, "lp_limit", "tuples")
        as_count(self.samples, "samples", "tuples")


@dataclass(frozen=True)
class Optima:
    """Per-pair optima at k (shape (N,) each). ``wor`` is the WOR point estimate and ``wor_bracket``
    its per-pair ``(low, high, variance of low, variance of high)`` (``low = high = wor`` and zero
    variances where the LP was solved)."""

    k: int
    iid: np.ndarray
    sequential: np.ndarray
    topk: np.ndarray
    wor: np.ndarray
    wor_bracket: np.ndarray
    wor_exact: bool

    def for_drafting(self, drafting: str) -> np.ndarray:
        """The optimum of the verifiers that draft this way."""
        return {"iid": self.iid, "wor": self.wor, "topk": self.topk}[drafting]

    def wor_estimate(self) -> Estimate:
        """Mean WOR optimum over the pairs with its Monte Carlo 95 % interval (module docstring)."""
        low, high, low_variance, high_variance = self.wor_bracket
        size = self.wor.size
        return Estimate(float(np.mean(self.wor)), float(low.mean() - Z95 * np.sqrt(low_variance.sum()) / size),
                        float(high.mean() + Z95 * np.sqrt(high_variance.sum()) / size))

    @property
    def wor_method(self) -> str:
        return "exact (transport LP)" if self.wor_exact else "monte carlo (prefix cuts)"


def support_capped(q: np.ndarray, k: int) -> int:
    """k, capped at the number of tokens with ``q > 0``."""
    return min(k, int(np.count_nonzero(q)))


def prefix_cut_samples(p: np.ndarray, q: np.ndarray, ks: list[int], samples: int,
                       rng: np.random.Generator) -> dict[int, tuple[float, float, float, float]]:
    """``{k: (low, high, variance of low, variance of high)}`` for one pair (module docstring);
    each k is capped at q's support."""
    profile = RatioProfile(p, q)
    rank = np.empty(p.size, dtype=np.int64)
    rank[profile.order] = np.arange(p.size)
    deepest = support_capped(q, max(ks))
    first, second = (np.maximum.accumulate(rank[draw_tuples(q, deepest, "wor", samples, rng)], axis=1)
                     for _ in range(2))
    bounds = {}
    for k in ks:
        column = support_capped(q, k) - 1
        inside = [_below(sample[:, column], p.size) for sample in (first, second)]
        chosen = int(np.argmin(profile.p_prefix - inside[0]))
        lowest = int(np.argmin(profile.p_prefix - inside[1]))
        variance = inside[1] * (1.0 - inside[1]) / samples
        bounds[k] = (float(profile.p_prefix[lowest] + 1.0 - inside[1][lowest]),
                     float(profile.p_prefix[chosen] + 1.0 - inside[1][chosen]),
                     float(variance[lowest]), float(variance[chosen]))
    return bounds


def _below(top_rank: np.ndarray, size: int) -> np.ndarray:
    """``F(i)``, i = 0..V: the fraction of tuples whose largest ratio rank is below i."""
    counts = np.bincount(top_rank, minlength=size)
    return np.concatenate([[0.0], np.cumsum(counts)]) / top_rank.size


def wor_optima(batch: PairBatch, ks: list[int], rng: np.random.Generator,
               settings: WorSettings = WorSettings()) -> dict[int, tuple[np.ndarray, np.ndarray, bool]]:
    """``{k: (value, bracket, exact)}`` per pair: the transport LP where small, else prefix cuts
    (``bracket``: shape (4, N), rows low, high and their variances)."""
    size = len(batch)
    value = {k: np.zeros(size) for k in ks}
    bracket = {k: np.zeros((4, size)) for k in ks}
    exact = {k: True for k in ks}
    scheme = DRAFTING_SCHEMES["wor"]
    for n, (p, q) in enumerate(zip(batch.p, batch.q)):
        sampled = [k for k in ks if scheme.tuple_count(q, support_capped(q, k)) > settings.lp_limit]
        for k in ks:
            if k not in sampled:
                value[k][n] = bracket[k][0, n] = bracket[k][1, n] = optimal_acceptance_lp(p, q, support_capped(q, k), "wor")
        if sampled:
            for k, cut in prefix_cut_samples(p, q, sampled, settings.samples, rng).items():
                value[k][n], bracket[k][:, n] = cut[1], cut
                exact[k] = False
    return {k: (value[k], bracket[k], exact[k]) for k in ks}


def optima(batch: PairBatch, ks: list[int], sequential: dict[int, np.ndarray], rng: np.random.Generator,
           settings: WorSettings = WorSettings()) -> dict[int, Optima]:
    """Every optimum at every k; ``sequential[k]`` is resispec's per-pair acceptance."""
    wor = wor_optima(batch, ks, rng, settings)
    result = {}
    for k in ks:
        iid = np.array([optimal_acceptance(p, q, k) for p, q in zip(batch.p, batch.q)])
        topk = np.array([optimal_acceptance(p, q, support_capped(q, k), "topk") for p, q in zip(batch.p, batch.q)])
        result[k] = Optima(k, iid, sequential[k], topk, *wor[k])
    return result
