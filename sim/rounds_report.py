"""Files written by ``resispec sim rounds``: per-round expected accepted tokens (CSV) and a PNG of the
paired differences against the baseline with two-standard-error bars."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from resispec.formats.atomic import atomic_path  # noqa: E402
from resispec.sim.rounds import Summary  # noqa: E402


def write_rounds_csv(path: Path, accepted: dict[str, np.ndarray]) -> Path:
    """One row per round: ``round`` and each verifier's ``E[accepted | tree]``."""
    with atomic_path(path) as temporary, open(temporary, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["round", *accepted])
        for index, values in enumerate(zip(*accepted.values())):
            writer.writerow([index, *(f"{value:.12g}" for value in values)])
    return path


def plot_differences(path: Path, kind: str, summaries: Sequence[Summary]) -> Path:
    """Horizontal bars: each verifier's paired difference to the baseline, +- 2 SE."""
    baseline = summaries[0].baseline
    others = [s for s in summaries if s.name != baseline]
    base = next(s for s in summaries if s.name == baseline)
    figure, axes = plt.subplots(figsize=(6.5, 0.6 * len(others) + 1.6))
    positions = np.arange(len(others))
    axes.barh(positions, [s.difference for s in others], xerr=[2 * s.difference_se for s in others],
              color=["tab:green" if s.resolved else "tab:gray" for s in others], capsize=4)
    axes.set_yticks(positions, [s.name for s in others])
    axes.axvline(0.0, color="black", linewidth=0.8)
    axes.invert_yaxis()
    axes.set_xlabel(f"E[accepted draft tokens | tree] - {baseline}'s (paired), +- 2 SE")
    axes.set_title(f"{kind} rounds: {base.rounds}; {baseline} accepts {base.mean:.3f} +- {base.se:.3f}\n"
                   "green: resolved at 2 SE", fontsize=9)
    figure.tight_layout()
    with atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=120)
    plt.close(figure)
    return path
