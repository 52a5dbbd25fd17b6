"""Headroom: the speedup over plain decoding that a draft of given acceptance and cost could reach on this machine.

`--tree auto` (`resispec.engine.decode.tree_search`) predicts the tokens per second of a tree from the verifier's
acceptance ``A(k)`` and the measured costs of a calibration (`resispec.engine.decode.calibration.Calibration`): the
target's forward over n nodes ``t(n)``, the draft's over w rows ``c(w)``, one node's verification ``u(k)``
and what real decoding adds per round ``v`` and per plain token ``v_plain``. Here the costs stay the measured
ones and the draft is hypothetical:

- its **cost** is a fraction ``f`` of the target's at equal rows, ``c(w) = f t(w)`` (f = 0: a free draft);
- its **acceptance** is ``a`` at every node with one candidate, independent of depth and of the position
  (no correlation between consecutive positions: ``kappa_d = 1``). Chains use ``A(1) = a`` only. Trees use
  ``A(k) = 1 - (1 - a)^k``, as if each further candidate were an independent try: a *model* of what several
  candidates add, not a bound (a draft whose candidates repeat gains less, docs/draft.md).

The attainable speedup is ``max_b E(b) / T(b)`` over the shapes `best_tree` searches, divided by plain
decoding's ``1 / (t(1) + v_plain)``. Since real text makes hard positions cluster (``kappa_d < 1`` on this
model's text) and the feature draft's deeper nodes accept less than its first, a real draft of one-candidate
acceptance ``a`` does no better than this: for a chain it is a ceiling; for trees, a ceiling under the model.
``required_acceptance`` inverts it: the least ``a`` whose attainable speedup reaches a goal, or None where even
``a = 1`` falls short (then the target's multi-row forward and the per-round costs alone forbid the goal).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from resispec.engine.decode.calibration import Calibration
from resispec.engine.decode.tree_search import MAX_CHILDREN, TreeChoice, best_tree

BISECTION_STEPS = 40
"""Halvings of [0, 1] in `required_acceptance`: the acceptance to 1e-12."""


@dataclass(frozen=True)
class Headroom:
    """The best shape for a hypothetical draft and its speedup over plain decoding (module docstring)."""

    acceptance: float
    draft_fraction: float
    trees: bool
    choice: TreeChoice
    speedup: float


def median_costs(calibrations: Sequence[Calibration]) -> Calibration:
    """One cost model from several calibrations of the same target (each times the target's forwards, the
    verification and the bookkeeping anew): the first, with each of those figures replaced by its median over
    ``calibrations``. The draft's figures (acceptance, draft costs, correlation) stay the first's; the headroom
    replaces them anyway."""
    if not calibrations:
        raise ValueError("median_costs: no calibration given")

    def median(curves: list[dict[int, float]]) -> dict[int, float]:
        return {key: float(np.median([curve[key] for curve in curves])) for key in curves[0]}

    return replace(calibrations[0], target_seconds=median([c.target_seconds for c in calibrations]),
                   verify_seconds=median([c.verify_seconds for c in calibrations]),
                   round_seconds=float(np.median([c.round_seconds for c in calibrations])),
                   plain_round_seconds=float(np.median([c.plain_round_seconds for c in calibrations])))


def plain_seconds(calibration: Calibration) -> float:
    """Seconds per token of plain decoding under the calibration's cost model: ``t(1) + v_plain``."""
    return calibration.target_cost(1) + calibration.plain_round_seconds


def attainable(calibration: Calibration, acceptance: float, draft_fraction: float, trees: bool = False) -> Headroom:
    """The best shape and speedup for a draft of one-candidate acceptance ``acceptance`` costing
    ``draft_fraction`` of the target's forward at equal rows (module docstring); chains only unless ``trees``."""
    if not 0.0 <= acceptance <= 1.0:
        raise ValueError(f"acceptance: expected a value in [0, 1], got {acceptance}")
    if not draft_fraction >= 0.0:
        raise ValueError(f"draft_fraction: expected a non-negative fraction of the target's cost, got {draft_fraction}")
    curve = [1.0 - (1.0 - acceptance) ** k for k in range(1, MAX_CHILDREN + 1)] if trees else [acceptance]
    choice = best_tree(curve, calibration.target_cost, lambda rows: draft_fraction * calibration.target_cost(rows),
                       calibration.round_seconds, verify_cost=calibration.verify_seconds.__getitem__)
    return Headroom(acceptance, draft_fraction, trees, choice, choice.tokens_per_second * plain_seconds(calibration))


def required_acceptance(calibration: Calibration, draft_fraction: float, goal: float,
                        trees: bool = False) -> float | None:
    """The least one-candidate acceptance whose attainable speedup reaches ``goal`` (bisection; it grows with
    the acceptance), or None where a perfect draft (``a = 1``) of this cost falls short."""
    if not attainable(calibration, 1.0, draft_fraction, trees).speedup >= goal:
        return None
    low, high = 0.0, 1.0
    for _ in range(BISECTION_STEPS):
        middle = (low + high) / 2
        low, high = (middle, high) if attainable(calibration, middle, draft_fraction, trees).speedup < goal \
            else (low, middle)
    return high


@dataclass(frozen=True)
class MeasuredDraft:
    """A real draft's point: its calibrated one-candidate acceptance, cost fraction and auto choice."""

    name: str
    acceptance: float
    draft_fraction: float
    choice: TreeChoice
    speedup: float


def measured_point(name: str, calibration: Calibration, costs: Calibration | None = None) -> MeasuredDraft:
    """``name``'s calibrated A(1), one-row cost ``c(1) / t(1)`` and the best shape `--tree auto` predicts for it
    (its own A(k), correlation and draft costs; the target's, verification and bookkeeping figures from ``costs``,
    default its own), with that shape's speedup over plain decoding. For a draft that declines rounds (n-gram)
    this is the speedup of the rounds it drafts: its calibration measures those positions only."""
    if costs is not None:
        calibration = replace(calibration, target_seconds=costs.target_seconds, verify_seconds=costs.verify_seconds,
                              round_seconds=costs.round_seconds, plain_round_seconds=costs.plain_round_seconds)
    choice = calibration.choose()
    return MeasuredDraft(name, calibration.acceptance[0], calibration.draft_cost(1) / calibration.target_cost(1),
                         choice, choice.tokens_per_second * plain_seconds(calibration))


def plot_headroom(calibration: Calibration, fractions: Sequence[float], points: Sequence[MeasuredDraft],
                  goal: float, path: Path, title: str, steps: int = 51) -> None:
    """Attainable speedup against acceptance, one chain curve (solid) and one tree curve (dashed, the model)
    per draft cost fraction, the goal as a line and each measured draft as a point; a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from resispec.formats.atomic import atomic_path

    grid = [i / (steps - 1) for i in range(steps)]
    figure, axes = plt.subplots(figsize=(7.5, 4.8))
    for index, fraction in enumerate(fractions):
        colour = f"C{index}"
        for trees, style in ((False, "-"), (True, "--")):
            axes.plot(grid, [attainable(calibration, a, fraction, trees).speedup for a in grid], style, color=colour,
                      label=f"draft cost {fraction:g} x target" + (" (trees, model)" if trees else " (chains)"))
    axes.axhline(goal, color="black", linewidth=0.8)
    axes.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    for point in points:
        axes.plot([point.acceptance], [point.speedup], "o", color="black")
        axes.annotate(f"{point.name} (cost {point.draft_fraction:.2f}; auto's tree)", (point.acceptance, point.speedup),
                      textcoords="offset points", xytext=(4, -12), fontsize=8)
    axes.set_xlabel("one-candidate acceptance a = sum_x min(p, q) (every node)")
    axes.set_ylabel("attainable tokens/s over plain decoding")
    axes.set_title(title, fontsize=8)
    axes.set_xlim(0, 1)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7, loc="upper left")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as staged:
        figure.savefig(staged, dpi=120)
    plt.close(figure)
