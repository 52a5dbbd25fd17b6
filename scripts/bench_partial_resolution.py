"""Per-row cost of partial_resolution against pooled's plan at the SmolLM2 vocabulary (V = 49,152), k = 2..8.

Rows: the shared logged SmolLM2 pairs spread to the full vocabulary
(``resispec.benchmarks.partial_resolution_speed.full_vocabulary_rows``), or ``--llm-like`` synthetic pairs of
``verify_speed``. Printed: one line per k (median build, one tuple and whole-row cost of each verifier, the
speedup, and the largest acceptance gap between the two on the same rows), with date, CPU extensions and load
average before and after. Usage:
``PYTHONPATH=. python3 scripts/bench_partial_resolution.py [--rows 24] [--draft q] [--k 2 3 4 5 6 7 8]``
(about a minute on 2 cores at load 2).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys

import numpy as np

from resispec.benchmarks.partial_resolution_speed import DEFAULT_KS, bench_rows, full_vocabulary_rows
from resispec.benchmarks.verify_speed import llm_like_pair
from resispec.engine.runtime.machine import cpu_description
from resispec.formats.pairs import read_logged

PAIRS = "/work/shared/data/smollm2_pairs.npz"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=24, help="rows timed per k (default 24)")
    parser.add_argument("--draft", default="q", help="draft of the logged pairs: q or q_weak (default q)")
    parser.add_argument("--k", type=int, nargs="+", default=list(DEFAULT_KS))
    parser.add_argument("--llm-like", action="store_true", help="synthetic LLM-like pairs at V = 49152 instead")
    parser.add_argument("--pairs", default=PAIRS, help=f"logged pairs (default {PAIRS})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.rows < 1 or min(args.k) < 1:
        print("error: --rows and --k must be >= 1", file=sys.stderr)
        return 2
    if args.llm_like:
        rng = np.random.default_rng(args.seed)
        rows = [llm_like_pair(49152, rng)[1:] for _ in range(args.rows)]
    else:
        rows = full_vocabulary_rows(read_logged(args.pairs), args.draft, args.rows)
    load_before = os.getloadavg()[0]
    results = bench_rows(rows, args.k, args.seed, progress=lambda line: print(line, file=sys.stderr, flush=True))
    load_after = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"cpu": cpu_description(), "load": [load_before, load_after],
                          "rows": [r.to_dict() for r in results]}))
        return 0
    print(f"{datetime.date.today()}, {cpu_description()}, load average {load_before:.1f} -> {load_after:.1f}; "
          f"V = {rows[0][0].size}, {len(rows)} rows ({'llm-like' if args.llm_like else 'SmolLM2 ' + args.draft})")
    print("k  pooled build ms  partial build ms  pooled tuple us  partial tuple us  pooled row ms  partial row ms  "
          "speedup  max |acc gap|")
    for r in results:
        print(f"{r.k}  {r.pooled_build_ms:15.2f}  {r.partial_build_ms:16.2f}  {r.pooled_tuple_us:15.0f}  "
              f"{r.partial_tuple_us:16.0f}  {r.pooled_row_ms:13.2f}  {r.partial_row_ms:14.2f}  {r.speedup:7.2f}  "
              f"{r.max_acceptance_gap:13.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
