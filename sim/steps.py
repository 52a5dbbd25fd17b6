"""Step-by-step statistics of one verifier on a batch of pairs, and the curves they give.

For a sequential verifier at k candidates and pair n (arrays of shape (N, k), step i = candidate i):

- ``reached[n, i] = P(candidates 1..i-1 rejected)`` (0 where step i does not exist: WOR and top-k
  drafting cannot propose more distinct tokens than the draft's support);
- ``accepted[n, i] = P(candidate i accepted)``, unconditionally; the acceptance is ``sum_i accepted``;
- ``drift[n, i] = E[1{step i reached} TV(r_i, s_i)]``: ``r_i`` is the residual target after i - 1
  rejections (``r_1 = p``), ``s_i`` the proposal candidate i is drawn from (q for i.i.d. drafting,
  the masked draft ``q_i`` for WOR, a point mass for top-k).

Curves pool over pairs: the drift curve is ``c_i = sum_n accepted[n, i] / sum_n reached[n, i]``, the
acceptance of candidate i given that candidates 1..i-1 were rejected; the residual-drift curve is
``sum_n drift[n, i] / sum_n reached[n, i]``, the mean TV at the moment step i is reached.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from resispec.formats.stats import Estimate, mean_estimate, ratio_estimate


@dataclass(frozen=True)
class StepStats:
    """Per-pair, per-step statistics (see the module docstring); ``exact`` is False when any pair
    was estimated by Monte Carlo over ``samples`` draws of ``unit`` (candidate tuples, or rejection
    paths; the verification randomness is always integrated out exactly)."""

    verifier: str
    k: int
    accepted: np.ndarray
    reached: np.ndarray
    drift: np.ndarray
    exact: bool
    samples: int = 0
    unit: str = "tuples"

    @property
    def acceptance(self) -> np.ndarray:
        """Per-pair acceptance probability (shape (N,))."""
        return self.accepted.sum(axis=1)

    @property
    def method(self) -> str:
        return "exact" if self.exact else f"monte carlo ({self.samples} {self.unit} per pair)"

    def drift_curve(self) -> list[Estimate]:
        """Conditional acceptance of candidate i given 1..i-1 rejected, for i = 1..k."""
        return [ratio_estimate(self.accepted[:, i], self.reached[:, i]) for i in range(self.k)]

    def residual_curve(self) -> list[Estimate]:
        """Mean ``TV(r_i, s_i)`` when step i is reached, for i = 1..k."""
        return [ratio_estimate(self.drift[:, i], self.reached[:, i]) for i in range(self.k)]

    def mean_acceptance(self) -> Estimate:
        return mean_estimate(self.acceptance)

    def truncated(self, k: int) -> StepStats:
        """The first k steps: the statistics at k of a verifier whose rule does not depend on k."""
        if not 1 <= k <= self.k:
            raise ValueError(f"k: can only truncate to 1..{self.k}, got {k}")
        return StepStats(self.verifier, k, self.accepted[:, :k], self.reached[:, :k], self.drift[:, :k],
                         self.exact, self.samples, self.unit)


def concatenate(parts: list[StepStats]) -> StepStats:
    """Statistics of consecutive row chunks joined into one (same verifier and k)."""
    starts = np.cumsum([0] + [part.accepted.shape[0] for part in parts])
    return interleave([(np.arange(start, start + part.accepted.shape[0]), part) for start, part in zip(starts, parts)])


def interleave(parts: list[tuple[np.ndarray, StepStats]]) -> StepStats:
    """One ``StepStats`` from parts that each cover the given rows of the batch (same verifier and k;
    together the rows tile the batch); Monte Carlo if any part is."""
    first = parts[0][1]
    size = sum(rows.size for rows, _ in parts)
    arrays = {name: np.zeros((size, first.k)) for name in ("accepted", "reached", "drift")}
    for rows, part in parts:
        for name, array in arrays.items():
            array[rows] = getattr(part, name)
    sampled = [part for _, part in parts if not part.exact] or [first]
    return StepStats(first.verifier, first.k, arrays["accepted"], arrays["reached"], arrays["drift"],
                     sampled[0].exact, max(part.samples for part in sampled), sampled[0].unit)
