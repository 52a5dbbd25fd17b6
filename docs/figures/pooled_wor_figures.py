"""pooled_wor on the logged SmolLM2 rows and its plan cost at V = 49152 (docs/pooled_wor.md).

Run from the repository root: ``python3 docs/figures/pooled_wor_figures.py``. Writes
``docs/figures/pooled_wor_real_rows.json`` (every row of ``/work/shared/data/smollm2_pairs.npz``, 2048
kept ids plus the merged tail, drafts q and q_weak, k = 2 and 4: mean acceptance, the least ratio-prefix
bound, the mean and largest gap, the share of rows within 1e-9 of the bound, median and largest seconds
per plan, the share of rows whose plan mixes in "latest in order" rules and the most such rules) and
``docs/figures/pooled_wor_speed_49152.json`` (the plan build and one verify after it on the
``resispec bench verify`` pair at V = 49152, k = 2 and 4, against a softmax timed alternately in the
same run, medians).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from scipy.special import softmax
from tqdm import tqdm

from resispec import get_verifier
from resispec.benchmarks.timing import median_ratio
from resispec.benchmarks.verify_speed import llm_like_pair
from resispec.formats.pairs import read_logged
from resispec.race import race_grid

HERE = Path(__file__).resolve().parent
LOGGED = "/work/shared/data/smollm2_pairs.npz"
AT_BOUND = 1e-9
POOLED_WOR = get_verifier("pooled_wor")


def real_rows() -> dict[str, dict]:
    logged = read_logged(LOGGED)
    out = {}
    for draft in ("q", "q_weak"):
        batch = logged.pairs(draft)
        for k in (2, 4):
            accepted, bounds, seconds, columns = [], [], [], []
            for p, q in tqdm(list(zip(batch.p, batch.q)), desc=f"{draft}, k = {k}"):
                start = time.perf_counter()
                bound = POOLED_WOR.bind(p, q, k)
                seconds.append(time.perf_counter() - start)
                accepted.append(bound.acceptance())
                bounds.append(bound.plan.plans[0].bound)
                columns.append(bound.plan.plans[0].column_weights.size)
            gap = np.array(bounds) - np.array(accepted)
            out[f"{draft},{k}"] = {"acc": float(np.mean(accepted)), "bound": float(np.mean(bounds)),
                                   "mean_gap": float(gap.mean()), "max_gap": float(gap.max()),
                                   "at_bound": float(np.mean(gap <= AT_BOUND)),
                                   "sec_per_row": float(np.median(seconds)), "sec_max": float(np.max(seconds)),
                                   "mixed": float(np.mean(np.array(columns) > 0)), "columns_max": int(max(columns))}
    return out


def speed(vocab: int = 49152, calls: int = 5) -> list[dict]:
    logits, p, q = llm_like_pair(vocab, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    out = []
    for k in (4, 2):
        POOLED_WOR.bind(p, q, k)  # compile the kernels outside the timing
        build, reference, ratio = median_ratio(lambda: POOLED_WOR.bind(p, q, k), lambda: softmax(logits), calls)
        bound = POOLED_WOR.bind(p, q, k)
        tuples = [(bound.draft(rng), rng.random(POOLED_WOR.uniforms_needed(k))) for _ in range(200)]
        start = time.perf_counter()
        for candidates, u in tuples:
            bound.verify(candidates, u)
        per_tuple = (time.perf_counter() - start) / len(tuples)
        out.append({"V": vocab, "k": k, "build_s": build, "softmax_s": reference, "build_over_softmax": ratio,
                    "tuple_s": per_tuple, "tuple_over_softmax": per_tuple / reference,
                    "nodes": int(race_grid(q, k).t.size), "cut": bound.plan.plans[0].cut,
                    "acceptance": bound.acceptance(), "bound": bound.plan.plans[0].bound})
        print(json.dumps(out[-1]))
    return out


def main() -> None:
    (HERE / "pooled_wor_speed_49152.json").write_text(json.dumps(speed(), indent=1) + "\n")
    rows = real_rows()
    (HERE / "pooled_wor_real_rows.json").write_text(json.dumps(rows, indent=1) + "\n")
    for key, row in rows.items():
        print(key, {name: f"{value:.6g}" for name, value in row.items()})


if __name__ == "__main__":
    main()
