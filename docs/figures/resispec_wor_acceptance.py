"""Exact acceptance of rrs_wor and resispec_wor against the WOR optima at small V (docs/resispec_wor.md).

Run from the repository root: ``python3 docs/figures/resispec_wor_acceptance.py [--quick]``. Writes
``docs/figures/resispec_wor_acceptance.{json,png}`` and prints the table in Markdown.

Three synthetic families at V = 6 (``dirichlet-0.3`` and ``dirichlet-1``: p and q independent
``Dir(alpha 1_V)``; ``llm-like``: ``p = softmax(2.5 z)``, ``q = softmax(2.5 z + eps)``, z, eps standard
normal), k = 2..5: exact acceptance by enumerating WOR tuples (with each law's largest error), the
sequential WOR optimum (LP) and alpha*-WOR (transport LP). The comparisons at realistic V (families
and the logged SmolLM2 rows at k = 2, 4, 8) are the simulator's: ``docs/figures/sim_figures.py``,
tables in docs/sim.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.special import softmax

from resispec.audit import exact_law
from resispec.bounds import optimal_acceptance_lp
from resispec.bounds_wor import sequential_optimum_wor_lp

HERE = Path(__file__).resolve().parent
FAMILIES = ("dirichlet-0.3", "dirichlet-1", "llm-like")


def synthetic_pair(family: str, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if family == "llm-like":
        logits = 2.5 * rng.standard_normal(size)
        return softmax(logits), softmax(logits + rng.standard_normal(size))
    alpha = {"dirichlet-0.3": 0.3, "dirichlet-1": 1.0}[family]
    return rng.dirichlet(np.full(size, alpha)), rng.dirichlet(np.full(size, alpha))


def small_v_table(pairs_per_family: int, ks: tuple[int, ...], seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows, exceptions = [], []
    for family in FAMILIES:
        pairs = [synthetic_pair(family, 6, rng) for _ in range(pairs_per_family)]
        for k in ks:
            laws = [exact_law("resispec_wor", p, q, k) for p, q in pairs]
            values = np.array([(exact_law("rrs_wor", p, q, k).acceptance, law.acceptance,
                                sequential_optimum_wor_lp(p, q, k), optimal_acceptance_lp(p, q, k, "wor"))
                               for (p, q), law in zip(pairs, laws)])
            for (p, q), (rrs_wor, resispec_wor, *_) in zip(pairs, values):
                if resispec_wor < rrs_wor - 1e-12:
                    exceptions.append({"family": family, "k": k, "p": p.tolist(), "q": q.tolist(),
                                       "rrs_wor": rrs_wor, "resispec_wor": resispec_wor})
            rrs_wor, resispec_wor, sequential, alpha = values.mean(axis=0)
            rows.append({"source": f"{family} (V=6)", "k": k, "pairs": len(pairs), "rrs_wor": rrs_wor,
                         "resispec_wor": resispec_wor, "sequential_optimum": sequential, "alpha_star_wor": alpha,
                         "share_of_sequential_gap": (resispec_wor - rrs_wor) / (sequential - rrs_wor),
                         "share_of_alpha_gap": (resispec_wor - rrs_wor) / (alpha - rrs_wor),
                         "pairs_below_rrs_wor": int(np.sum(values[:, 1] < values[:, 0] - 1e-12)),
                         "max_gap_to_sequential": float(np.max(values[:, 2] - values[:, 1])),
                         "max_exact_law_error": max(law.max_error for law in laws)})
            print(f"  small V {family} k={k} done", flush=True)
    return rows, exceptions


def plot(small: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sources = list(dict.fromkeys(row["source"] for row in small))
    fig, axes = plt.subplots(1, len(sources), figsize=(4.2 * len(sources), 3.6), squeeze=False)
    for ax, source in zip(axes.flat, sources):
        rows = [row for row in small if row["source"] == source]
        ks = [row["k"] for row in rows]
        ax.plot(ks, [row["rrs_wor"] for row in rows], "o-", label="rrs_wor")
        ax.plot(ks, [row["resispec_wor"] for row in rows], "s-", label="resispec_wor")
        ax.plot(ks, [row["sequential_optimum"] for row in rows], "^--", label="sequential WOR optimum (LP)")
        ax.plot(ks, [row["alpha_star_wor"] for row in rows], "k:", label="alpha*-WOR (transport LP)")
        ax.set_title(source)
        ax.set_xlabel("k (candidates)")
        ax.set_ylabel("mean acceptance")
        ax.set_xticks(ks)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("resispec_wor vs rrs_wor and the WOR optima at V = 6, exact (target p, draft q)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def markdown(rows: list[dict], keys: list[str]) -> str:
    def cell(value):
        if isinstance(value, float):
            return f"{value:.4f}" if value == 0 or abs(value) >= 1e-3 else f"{value:.1e}"
        return "-" if value is None else str(value)

    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(cell(row.get(key)) for key in keys) + " |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few pairs (a smoke run)")
    args = parser.parse_args()
    small, exceptions = small_v_table(4 if args.quick else 40, (2, 3, 4, 5), seed=1)
    result = {"small_v": small, "exceptions_below_rrs_wor": exceptions}
    suffix = "_quick" if args.quick else ""
    (HERE / f"resispec_wor_acceptance{suffix}.json").write_text(json.dumps(result, indent=1))
    plot(small, HERE / f"resispec_wor_acceptance{suffix}.png")
    print(markdown(small, ["source", "k", "pairs", "rrs_wor", "resispec_wor", "sequential_optimum", "alpha_star_wor",
                           "share_of_sequential_gap", "share_of_alpha_gap", "pairs_below_rrs_wor",
                           "max_gap_to_sequential", "max_exact_law_error"]))
    print(f"\npairs where resispec_wor < rrs_wor (exact, small V): {len(exceptions)}")


if __name__ == "__main__":
    main()
