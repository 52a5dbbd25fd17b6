"""The figures and tables of docs/sim.md (and the numbers docs/pooled.md and docs/resispec_wor.md link to).

Run from the repository root (about 20 min on the shared 2-core machine; needs the logged file
``/work/shared/data/smollm2_pairs.npz``): ``python3 docs/figures/sim_figures.py [--quick]``. One
``resispec.sim.run_compare`` per set of sources; the drift figures reuse the k = 8 statistics of the main run.

- main: three synthetic families (500 pairs each) and the SmolLM2 logged rows (drafts ``q`` and
  ``q_weak``, and the shipped sample), k = 1, 2, 4, 8, tree 4,2,2,1, every verifier the simulator runs;
- small V: the three families at V = 8 (200 pairs each), k = 2, 4, everything exact (tuples
  enumerated, alpha*-WOR by the transport LP, the sequential WOR optimum by its LP).

Writes ``docs/figures/sim_{acceptance_vs_k,drift_curves,residual_drift}.png`` (64-colour palettes, to
keep them small) and ``docs/figures/sim_figures.json`` (the numbers of the tables) and prints the
tables in Markdown.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from resispec.sim import MonteCarlo, Settings, run_compare
from resispec.sim.explorer import CompareResult, DriftResult
from resispec.sim.plots import plot_acceptance_vs_k, plot_drift
from resispec.sim.sources import readable_spec

HERE = Path(__file__).resolve().parent
LOGGED = "/work/shared/data/smollm2_pairs.npz"
MAIN = ["dirichlet:alpha=0.5,V=256", "zipf:s=1.1,V=1000,head=16,mode=permute", "llm:sigma=1,V=1000",
        f"logged:{LOGGED}", f"logged:{LOGGED},draft=q_weak", "logged:sample"]
SMALL = ["dirichlet:alpha=0.5,V=8", "zipf:s=1.1,V=8,head=8,mode=permute", "llm:sigma=1,V=8"]
DRIFT = (0, 2, 3)
"""Sources of the drift figures (indices into MAIN)."""
VERIFIERS = ["rrs", "rrs_wor", "spectr", "resispec", "pooled", "resispec_wor", "resispec_paper"]
TABLE_KS = (2, 4, 8)


def label(source: str) -> str:
    if source.startswith(f"logged:{LOGGED}"):
        return "SmolLM2 logged, draft `" + ("q_weak" if "q_weak" in source else "q") + "`"
    return "SmolLM2 shipped sample" if source == "logged:sample" else f"`{source}`"


def iid_rows(result: CompareResult) -> list[dict]:
    """Per source and k: the i.i.d. verifiers, alpha*, and pooled's per-pair gain over resispec."""
    rows = []
    for evaluation in result.evaluations:
        for k in (k for k in TABLE_KS if k in result.ks):
            records = {name: evaluation.record(name, k) for name in result.verifiers}
            pooled = records["pooled"]
            gain = evaluation.stats["pooled"][k].acceptance - evaluation.stats["resispec"][k].acceptance
            rows.append({
                "source": label(evaluation.source), "pairs": pooled["pairs"], "k": k,
                **{name: records[name]["acceptance"]
                   for name in ("rrs", "spectr", "resispec", "pooled", "resispec_paper")},
                "alpha_star": pooled["iid_optimum"], "gain_mean": pooled["gain_over_resispec"],
                "gain_max": pooled["max_gain_over_resispec"], "gain_row": pooled["max_gain_row"],
                "gain_min": float(gain.min()),
                "pooled_minus_alpha_star": float(np.abs(evaluation.stats["pooled"][k].acceptance
                                                        - evaluation.optima[k].iid).max()),
            })
    return rows


def wor_rows(result: CompareResult) -> list[dict]:
    """Per source and k: rrs_wor, resispec_wor, the WOR optima and the share of the gap recovered."""
    rows = []
    for evaluation in result.evaluations:
        for k in (k for k in TABLE_KS if k in result.ks):
            base, shaped = evaluation.record("rrs_wor", k), evaluation.record("resispec_wor", k)
            gain = evaluation.stats["resispec_wor"][k].acceptance - evaluation.stats["rrs_wor"][k].acceptance
            rows.append({
                "source": label(evaluation.source), "pairs": base["pairs"], "k": k,
                "rrs_wor": base["acceptance"], "rrs_wor_half_width": _half(base["acceptance_ci"]),
                "resispec_wor": shaped["acceptance"], "resispec_wor_method": shaped["method"],
                "gain_mean": float(gain.mean()), "gain_half_width": 1.96 * float(gain.std(ddof=1)) / np.sqrt(gain.size),
                "gain_min": float(gain.min()),
                "sequential_wor": shaped["sequential_wor_optimum"],
                "sequential_wor_method": shaped["sequential_wor_optimum_method"],
                "alpha_star_wor": shaped["wor_optimum"], "alpha_star_wor_method": shaped["wor_optimum_method"],
                "alpha_star_wor_error": shaped["wor_optimum_error"], "alpha_star": shaped["iid_optimum"],
                "share": shaped["share_of_gap"], "share_ci": shaped["share_of_gap_ci"],
                "share_sequential": shaped["share_of_sequential_gap"],
                "share_sequential_ci": shaped["share_of_sequential_gap_ci"],
            })
    return rows


def _half(interval: list[float]) -> float:
    return 0.5 * (interval[1] - interval[0])


def cell(value) -> str:
    if isinstance(value, float):
        return "-" if value != value else f"{value:.4f}"
    return str(value)


def share(row: dict, key: str) -> str:
    if row[key] != row[key]:
        return "-"
    low, high = row[f"{key}_ci"]
    return f"{100 * row[key]:.0f} % [{100 * low:.0f}, {100 * high:.0f}]"


def iid_table(rows: list[dict]) -> str:
    lines = ["| source | k | rrs | spectr | resispec | pooled | alpha\\* | pooled - resispec: mean / largest (row) | "
             "resispec_paper (biased) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['source']} ({r['pairs']}) | {r['k']} | {cell(r['rrs'])} | {cell(r['spectr'])} | "
                     f"{cell(r['resispec'])} | {cell(r['pooled'])} | {cell(r['alpha_star'])} | "
                     f"{r['gain_mean']:.4f} / {r['gain_max']:.4f} ({r['gain_row']}) | {cell(r['resispec_paper'])} |")
    return "\n".join(lines)


def wor_table(rows: list[dict]) -> str:
    lines = ["| source | k | rrs_wor | resispec_wor | gain [95% CI] | seq. WOR optimum | alpha\\*-WOR | "
             "share of gap to alpha\\*-WOR [95% CI] | share of gap to seq. WOR optimum |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['source']} ({r['pairs']}) | {r['k']} | {cell(r['rrs_wor'])} | {cell(r['resispec_wor'])} | "
                     f"{r['gain_mean']:.4f} ± {r['gain_half_width']:.4f} | {cell(r['sequential_wor'])} | "
                     f"{cell(r['alpha_star_wor'])} | {share(r, 'share')} | {share(r, 'share_sequential')} |")
    return "\n".join(lines)


def tree_table(result: CompareResult) -> str:
    records = result.tree_records()
    names = list(dict.fromkeys(r["verifier"] for r in records))
    lines = ["| source | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for evaluation in result.evaluations:
        cells = {r["verifier"]: f"{r['accepted_analytic']:.2f} / {r['accepted_replay']:.2f}"
                 for r in records if r["source"] == evaluation.source}
        lines.append(f"| {label(evaluation.source)} | " + " | ".join(cells[name] for name in names) + " |")
    return "\n".join(lines)


def small_png(path: Path) -> None:
    """Rewrite a plot as a 64-colour palette PNG (about a quarter of the size; plots have few colours)."""
    from PIL import Image

    with Image.open(path) as image:
        palette = image.convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    palette.save(path, optimize=True)


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few pairs (a smoke run; files get a _quick suffix)")
    args = parser.parse_args()
    pairs, small_pairs = (12, 6) if args.quick else (500, 200)
    suffix = "_quick" if args.quick else ""
    main_run = run_compare(MAIN, VERIFIERS, [1, 2, 4, 8], (4, 2, 2, 1),
                           Settings(pairs=pairs, seed=0, monte_carlo=MonteCarlo(samples=128)), progress)
    small_run = run_compare(SMALL, VERIFIERS, [2, 4], (2,),
                            Settings(pairs=small_pairs, seed=0,
                                     monte_carlo=MonteCarlo(samples=128, enumeration_limit=5000)),
                            progress)
    drift = DriftResult(8, VERIFIERS, [main_run.evaluations[i] for i in DRIFT])
    for figure in (plot_acceptance_vs_k(main_run, HERE / f"sim_acceptance_vs_k{suffix}.png"),
                   plot_drift(drift, HERE / f"sim_drift_curves{suffix}.png"),
                   plot_drift(drift, HERE / f"sim_residual_drift{suffix}.png", residual=True)):
        small_png(figure)
    tables = {"iid": iid_rows(main_run), "wor": wor_rows(main_run), "wor_small_v": wor_rows(small_run),
              "iid_small_v": iid_rows(small_run),
              "drift": [{"source": readable_spec(record["source"]), "verifier": record["verifier"],
                         "curve": record["curve"]} for record in drift.records()]}
    (HERE / f"sim_figures{suffix}.json").write_text(json.dumps(tables, indent=1))
    print(iid_table(tables["iid"]), iid_table(tables["iid_small_v"]), wor_table(tables["wor"]),
          wor_table(tables["wor_small_v"]), tree_table(main_run), sep="\n\n")


if __name__ == "__main__":
    main()
