"""Files written by ``resispec sim``: CSV tables and PNG plots in an output directory."""

from __future__ import annotations

import csv
from pathlib import Path

from sim.explorer import CompareResult, DriftResult


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


def write_drift(result: DriftResult, out: Path) -> dict[str, Path]:
    """``drift.csv`` (per step), ``drift_summary.csv`` (acceptance and optima), and the plots."""
    from sim.plots import plot_drift, plot_gaps

    out.mkdir(parents=True, exist_ok=True)
    summary = [{key: value for key, value in record.items() if key != "curve"} for record in result.records()]
    return {
        "drift_csv": write_csv(out / "drift.csv", drift_rows(result)),
        "summary_csv": write_csv(out / "drift_summary.csv", summary),
        "drift_png": plot_drift(result, out / "drift_curves.png"),
        "residual_png": plot_drift(result, out / "residual_drift.png", residual=True),
        "gap_png": plot_gaps(result.evaluations, result.verifiers, result.k, out / "optimum_gap.png"),
    }


def write_compare(result: CompareResult, out: Path) -> dict[str, Path]:
    """``compare.csv`` (per source, verifier and k), ``tree.csv``, and the plots."""
    from sim.plots import plot_acceptance_vs_k, plot_gaps

    out.mkdir(parents=True, exist_ok=True)
    return {
        "compare_csv": write_csv(out / "compare.csv", result.records()),
        "tree_csv": write_csv(out / "tree.csv", result.tree_records()),
        "acceptance_png": plot_acceptance_vs_k(result, out / "acceptance_vs_k.png"),
        "gap_png": plot_gaps(result.evaluations, result.verifiers, max(result.ks), out / "optimum_gap.png"),
    }
