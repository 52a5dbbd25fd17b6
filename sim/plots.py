"""PNG figures of the explorations: drift curves, residual drift, acceptance vs k, gaps to the optimum.

One panel per source. Every verifier keeps its colour across figures; the biased control
(resispec_paper) is drawn dashed and labelled "(biased)". pooled is not sequential: the drift figures
show its single selection step as one star at i = 1, labelled so. matplotlib runs headless (Agg).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from resispec.sim.explorer import CompareResult, DriftResult, Evaluation  # noqa: E402
from resispec.sim.sources import readable_spec  # noqa: E402
from resispec.verifiers import VERIFIERS  # noqa: E402

LEGEND_COLUMN_INCHES = 2.8
"""Width of one column of a shared legend."""


def label(verifier: str) -> str:
    """Legend label: the name, with "(biased)" for a control that is not exact."""
    return verifier if VERIFIERS[verifier].claims_exact else f"{verifier} (biased)"


def style(verifier: str) -> dict:
    return {"color": VERIFIERS[verifier].colour, "linestyle": "-" if VERIFIERS[verifier].claims_exact else "--",
            "marker": VERIFIERS[verifier].marker, "label": label(verifier)}


def _panels(evaluations: list[Evaluation], title: str):
    count = len(evaluations)
    columns = min(count, 3)
    rows = -(-count // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(5.6 * columns, 4.2 * rows), squeeze=False)
    for axis in axes.flat[count:]:
        axis.set_visible(False)
    figure.suptitle(textwrap.fill(title, width=int(62 * columns)))
    return figure, [(axis, evaluation) for axis, evaluation in zip(axes.flat, evaluations)]


def _panel_title(evaluation: Evaluation) -> str:
    source = readable_spec(evaluation.source)
    source = source if len(source) <= 48 else "..." + source[-45:]
    return f"{source}\n({len(evaluation.batch)} pairs)"


def _finish(figure, path: Path, shared_legend=None) -> Path:
    """Save; ``shared_legend``: an axis whose legend entries serve every panel, drawn once below them."""
    bottom = 0.0
    if shared_legend is not None:
        handles, labels = shared_legend.get_legend_handles_labels()
        columns = max(1, min(len(labels), int(figure.get_figwidth() // LEGEND_COLUMN_INCHES)))
        legend = figure.legend(handles, labels, loc="lower center", ncol=columns, fontsize=8, frameon=False)
        figure.canvas.draw()
        height = legend.get_window_extent().height / figure.dpi + 0.1  # inches, added below the panels
        figure.set_figheight(figure.get_figheight() + height)
        bottom = height / figure.get_figheight()
    figure.tight_layout(rect=(0, bottom, 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def plot_drift(result: DriftResult, path: Path, residual: bool = False) -> Path:
    """Conditional acceptance (or residual TV) by candidate index, one line per verifier, 95 % bands."""
    if residual:
        title = (f"Residual drift at k = {result.k}: total variation between the residual after i - 1 "
                 "rejections and the proposal of candidate i")
        ylabel = "TV(residual, proposal of candidate i)"
    else:
        title = f"Drift curves at k = {result.k}: acceptance of candidate i given candidates 1..i-1 were rejected"
        ylabel = "P(accept candidate i | 1..i-1 rejected)"
    figure, panels = _panels(result.evaluations, title)
    steps = np.arange(1, result.k + 1)
    for axis, evaluation in panels:
        for name in result.verifiers:
            stats = evaluation.stats[name][result.k]
            curve = stats.residual_curve() if residual else stats.drift_curve()
            values = np.array([[e.value, e.low, e.high] for e in curve])
            if VERIFIERS[name].single_step:  # one selection step: a point, not a curve over i
                what = "TV(p, selection law)" if residual else "P(accept selected)"
                axis.errorbar([1], values[:1, 0], yerr=[values[:1, 0] - values[:1, 1], values[:1, 2] - values[:1, 0]],
                              color=VERIFIERS[name].colour, marker="*", markersize=11, linestyle="none",
                              label=f"{label(name)}: one selection\nstep, {what}")
                continue
            axis.plot(steps, values[:, 0], **style(name))
            axis.fill_between(steps, values[:, 1], values[:, 2], color=VERIFIERS[name].colour, alpha=0.1)
        axis.set(title=_panel_title(evaluation), xlabel="candidate index i", ylabel=ylabel, xticks=steps)
        axis.set_ylim(bottom=0)
        axis.grid(alpha=0.3)
    return _finish(figure, path, shared_legend=panels[0][0])


def plot_acceptance_vs_k(result: CompareResult, path: Path) -> Path:
    """Mean acceptance vs k per verifier (all on the same pairs), with the optima as bands: i.i.d. from
    the sequential optimum to alpha*, WOR from the sequential WOR optimum (where computed) to alpha*-WOR
    (the transport LP, or the ratio-prefix bound)."""
    figure, panels = _panels(result.evaluations, "Acceptance vs number of candidates k, against the optima")
    ks = np.array(result.ks)
    for axis, evaluation in panels:
        records = {name: [evaluation.record(name, k) for k in result.ks] for name in result.verifiers}
        first = next(iter(records.values()))
        iid = np.array([r["iid_optimum"] for r in first])
        sequential = np.array([r["sequential_optimum"] for r in first])
        wor = np.array([r["wor_optimum"] for r in first])
        sequential_wor = np.array([r["sequential_wor_optimum"] for r in first])
        axis.fill_between(ks, sequential, iid, color="black", alpha=0.12, linewidth=0,
                          label="optimum, i.i.d. candidates\n(sequential to alpha*)")
        axis.plot(ks, iid, color="black", linewidth=0.8)
        exact = any("transport LP" in r["wor_optimum_method"] for r in first)
        bound = any("prefix" in r["wor_optimum_method"] for r in first)
        how = "transport LP where small, else prefix bound" if exact and bound else "prefix bound" if bound \
            else "transport LP"
        axis.fill_between(ks, sequential_wor, wor, color="tab:cyan", alpha=0.3, linewidth=0,
                          label="optimum, WOR candidates\n(sequential WOR, where computed, to alpha*-WOR)")
        axis.plot(ks, wor, color="tab:cyan", linestyle=":", linewidth=1.2,
                  label=f"alpha*-WOR ({how})")
        for name, rows in records.items():  # verifiers share the pairs: their intervals are in compare.csv
            axis.plot(ks, [r["acceptance"] for r in rows], **style(name))
        axis.set_xscale("log", base=2)
        axis.set(title=_panel_title(evaluation), xlabel="candidates k", ylabel="mean acceptance probability",
                 xticks=ks, xticklabels=[str(k) for k in ks])
        axis.grid(alpha=0.3)
    return _finish(figure, path, shared_legend=panels[0][0])


def plot_gaps(evaluations: list[Evaluation], verifiers: list[str], k: int, path: Path) -> Path:
    """Histogram over pairs of the gap to the optimum of each verifier's drafting scheme, at k.

    The x range covers the exact verifiers; a biased verifier's gaps below it are piled into the
    leftmost bin, and its legend entry counts the pairs where it accepts more than the optimum.
    """
    figure, panels = _panels(evaluations, f"Gap to the optimum at k = {k}, per pair (optimum of the verifier's "
                                          "drafting scheme minus its acceptance; below 0 only for a biased rule)")
    for axis, evaluation in panels:
        gaps = {name: evaluation.gaps(name, k) for name in verifiers}
        exact = [values for name, values in gaps.items() if VERIFIERS[name].claims_exact] or list(gaps.values())
        low = min(min(values.min() for values in exact), -0.02)
        high = max(max(values.max() for values in gaps.values()), 0.02)
        bins = np.linspace(low, high, 41)
        for name, values in gaps.items():
            kind = {"iid": "alpha*", "wor": "alpha*-WOR", "topk": "top-k optimum"}[VERIFIERS[name].drafting]
            text = f"{label(name)} vs {kind}"
            if not VERIFIERS[name].claims_exact:
                text += f"\n({int((values < 0).sum())} of {values.size} pairs above it; left edge: gap <= {low:.2f})"
            axis.hist(np.clip(values, low, high), bins=bins, histtype="step", linewidth=1.5,
                      color=VERIFIERS[name].colour, linestyle=style(name)["linestyle"], label=text)
        axis.axvline(0.0, color="black", linewidth=0.8)
        axis.set(title=_panel_title(evaluation), xlabel="optimum - acceptance", ylabel="pairs")
        axis.legend(fontsize=7)
    return _finish(figure, path)
