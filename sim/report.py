"""Files written by ``resispec sim``: CSV tables and PNG plots in an output directory."""

from __future__ import annotations

import csv
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from resispec.formats.atomic import atomic_path
from resispec.sim.explorer import CompareResult, DriftResult


def write_csv(path: Path, records: list[dict]) -> Path:
    """One row per record; a ``[low, high]`` interval becomes ``name_low`` and ``name_high`` columns."""
    rows = []
    for record in records:
        row = {}
        for key, value in record.items():
            if isinstance(value, list) and key.endswith("_ci"):
                row[f"{key[:-3]}_low"], row[f"{key[:-3]}_high"] = value
            elif isinstance(value, list):
                row[key] = "x".join(str(item) for item in value)
            else:
                row[key] = value
        rows.append(row)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def drift_rows(result: DriftResult) -> list[dict]:
    """One row per (source, verifier, step) of the drift curves."""
    rows = []
    for record in result.records():
        curve = record.pop("curve")
        for step in curve:
            rows.append({"source": record["source"], "verifier": record["verifier"], "biased": record["biased"],
                         "k": record["k"], "pairs": record["pairs"], "method": record["method"], **step})
    return rows


Writer = Callable[[Path], Path]


def write_all(out: Path, writers: dict[str, tuple[str, Writer]]) -> dict[str, Path]:
    """Run every writer (key -> (file name, write(path))) on a temporary name of its file
    (``resispec.formats.atomic.atomic_path``), then rename them all into place: a failure (or Ctrl-C)
    leaves none of this run's files and every file that was there as it was (never a complete-looking
    first file beside a missing second). Returns key -> final path."""
    out.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        for name, write in writers.values():
            write(stack.enter_context(atomic_path(out / name)))
    return {key: out / name for key, (name, _) in writers.items()}


def write_drift(result: DriftResult, out: Path) -> dict[str, Path]:
    """``drift.csv`` (per step), ``drift_summary.csv`` (acceptance and optima), and the plots."""
    from resispec.sim.plots import plot_drift, plot_gaps

    summary = [{key: value for key, value in record.items() if key != "curve"} for record in result.records()]
    return write_all(out, {
        "drift_csv": ("drift.csv", lambda path: write_csv(path, drift_rows(result))),
        "summary_csv": ("drift_summary.csv", lambda path: write_csv(path, summary)),
        "drift_png": ("drift_curves.png", lambda path: plot_drift(result, path)),
        "residual_png": ("residual_drift.png", lambda path: plot_drift(result, path, residual=True)),
        "gap_png": ("optimum_gap.png", lambda path: plot_gaps(result.evaluations, result.verifiers, result.k, path)),
    })


def write_compare(result: CompareResult, out: Path) -> dict[str, Path]:
    """``compare.csv`` (per source, verifier and k), ``tree.csv``, and the plots."""
    from resispec.sim.plots import plot_acceptance_vs_k, plot_gaps

    return write_all(out, {
        "compare_csv": ("compare.csv", lambda path: write_csv(path, result.records())),
        "tree_csv": ("tree.csv", lambda path: write_csv(path, result.tree_records())),
        "acceptance_png": ("acceptance_vs_k.png", lambda path: plot_acceptance_vs_k(result, path)),
        "gap_png": ("optimum_gap.png",
                    lambda path: plot_gaps(result.evaluations, result.verifiers, max(result.ks), path)),
    })
