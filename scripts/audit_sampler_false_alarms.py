"""Measure how often the audit rejects an exact sampler (the false-alarm rate its Bonferroni level bounds by 0.01).

Each configuration audits an exact sampler at the default samples and contexts over ``--seeds`` audit seeds (the
sampler's own randomness seeded per call by the audit); prints per configuration the rejections, the seconds per
audit, and writes a JSON record with ``--out``. Configurations (the samplers are the test suite's,
tests/resispec/audit/):

- ``engine node``: ``engine_samplers.engine_node`` (sps drafting itself by Gumbel-max, seeds and positions);
- ``engine tree``: ``engine_samplers.engine_tree`` (recursive rejection sampling down a tree it drafts, branching
  2,2, seeds and positions; the tree families, the tied ``ties`` included);
- ``chain, every claim``: ``toy_samplers.processed_chain`` at gamma = 4 with every processing claim on;
- ``mixed rows``: the same with per-row parameters (the ``processing`` extra, three combinations);
- ``mixed rows, every group``: every claim on and rows varying every group of ``row_parameters.VARY`` (six
  combinations: temperature / top-k / top-p, min-p / logit bias / banned ids, penalties over their own history,
  an allowed mask with min_tokens);
- ``vllm-style chain``: ``vllm_style.vllm_chain`` (target logits, draft probabilities, caller-drawn bonus,
  generator map, unequal lengths), float32 torch.

Usage: ``PYTHONPATH=. python3 scripts/audit_sampler_false_alarms.py [--seeds 40] [--only NAME ...] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial

from resispec.audit.sampler import audit_sampler
from resispec.formats.atomic import atomic_write_text
from resispec.processing import Processing
from tests.resispec.audit import engine_samplers, toy_samplers, vllm_style

EVERY_CLAIM = Processing(temperature=0.8, top_k=5, min_p=0.1, logit_bias=((2, 1.0),), repetition_penalty=1.3,
                         presence_penalty=0.3, frequency_penalty=0.4, banned=(4,), min_tokens=6, eos=5)

CONFIGURATIONS = {
    "engine node": (engine_samplers.engine_node, dict(level="node", k=1, drafting="engine", rule="sps",
                                                      extras=["seeds", "positions"])),
    "engine tree": (engine_samplers.engine_tree, dict(level="tree", drafting="engine",
                                                      extras=["seeds", "positions"])),
    "chain, every claim": (partial(toy_samplers.processed_chain, processing=EVERY_CLAIM),
                           dict(level="chain", gamma=4, processing=EVERY_CLAIM, inputs="logits", extras=["history"])),
    "mixed rows": (toy_samplers.processed_chain, dict(level="chain", gamma=4, inputs="logits",
                                                      extras=["history", "processing"])),
    "mixed rows, every group": (toy_samplers.processed_chain, dict(
        level="chain", gamma=4, processing=EVERY_CLAIM, inputs="logits", extras=["history", "processing"],
        vary=["sampling", "bias", "penalties", "mask"])),
    "vllm-style chain": (vllm_style.vllm_chain, dict(level="chain", gamma=4, arrays="torch", dtype="float32",
                                                     inputs="target-logits", rule="sps",
                                                     extras=["lengths", "bonus", "generator_map"])),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--only", nargs="+", choices=list(CONFIGURATIONS), default=list(CONFIGURATIONS))
    parser.add_argument("--out", default=None, help="a JSON file for the record")
    args = parser.parse_args()
    record = {}
    for name in args.only:
        sampler, options = CONFIGURATIONS[name]
        rejected, seconds = [], []
        for seed in range(args.seeds):
            start = time.perf_counter()
            report = audit_sampler(sampler, seed=seed, progress=False, **options)
            seconds.append(time.perf_counter() - start)
            if report.verdict != "PASS":
                rejected.append({"seed": seed, "verdict": report.verdict,
                                 "tests": [f"{t.name}, {t.context}" for t in report.rejected_tests]})
            print(f"{name}: seed {seed} {report.verdict} in {seconds[-1]:.1f} s", file=sys.stderr, flush=True)
        record[name] = {"seeds": args.seeds, "rejected": rejected, "rate": len(rejected) / args.seeds,
                        "seconds median": sorted(seconds)[len(seconds) // 2], "seconds max": max(seconds)}
        print(f"{name}: {len(rejected)} of {args.seeds} rejected; median {record[name]['seconds median']:.1f} s "
              f"per audit, max {record[name]['seconds max']:.1f} s", flush=True)
    if args.out:
        atomic_write_text(args.out, json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
