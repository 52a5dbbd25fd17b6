"""Measure tree-level ties and tree engine drafting (docs/audit_sampler.md, "Worked examples by bug class").

- ``cost``: the default tree audit (the zoo's rrs at branching 2,2, 6000 samples per family) over the chain families
  alone (before the tied ``ties`` family) and over ``TREE_FAMILIES`` (after), interleaved ``--reps`` times, and the
  engine-drafting tree audit (``engine_samplers.engine_tree``, seeds and positions) beside it;
- ``power``: at the default samples, the tests that reject each toy (p-value, observed TV, detectable TV):
  ``toy_samplers.rrs_tree(collapse_ties=True)`` at float32 and float64, ``engine_samplers.engine_tree(coupling=
  "gumbel")``, and the verdicts of their twins.

Usage: ``PYTHONPATH=. python3 scripts/audit_sampler_tree_2026.py [--reps 3] [--only cost|power]``.
"""

from __future__ import annotations

import argparse
import os
import time
from functools import partial

from resispec.audit.sampler import audit_sampler, zoo_sampler
from resispec.audit.sampler.models import CHAIN_FAMILIES, TREE_FAMILIES
from tests.resispec.audit import engine_samplers, toy_samplers

ENGINE = dict(drafting="engine", extras=["seeds", "positions"])


def timed(sampler, **options) -> tuple[float, object]:
    start = time.perf_counter()
    report = audit_sampler(sampler, "tree", progress=False, **options)
    return time.perf_counter() - start, report


def cost(reps: int) -> None:
    for rep in range(reps):
        line = [f"rep {rep}"]
        for name, families in (("chain families", CHAIN_FAMILIES), ("tree families", TREE_FAMILIES)):
            seconds, report = timed(zoo_sampler("rrs", "tree", (2, 2)), families=list(families))
            line.append(f"{name} {seconds:.1f} s ({report.verdict.value})")
        seconds, report = timed(engine_samplers.engine_tree, **ENGINE)
        line.append(f"engine drafting {seconds:.1f} s ({report.verdict.value})")
        print("; ".join(line), f"(load {os.getloadavg()[0]:.1f})", flush=True)


def power() -> None:
    toys = {
        "rrs_tree collapsing ties, float32": (partial(toy_samplers.rrs_tree, collapse_ties=True),
                                              dict(extras=["branching"], dtype="float32")),
        "rrs_tree collapsing ties, float64": (partial(toy_samplers.rrs_tree, collapse_ties=True),
                                              dict(extras=["branching"])),
        "rrs_tree (twin), float32": (toy_samplers.rrs_tree, dict(extras=["branching"], dtype="float32")),
        "engine_tree, shared Gumbel": (partial(engine_samplers.engine_tree, coupling="gumbel"), ENGINE),
        "engine_tree (twin)": (engine_samplers.engine_tree, ENGINE),
        "engine_tree without replacement (twin)": (partial(engine_samplers.engine_tree, siblings="wor"),
                                                   {**ENGINE, "drafting": "engine-wor"}),
    }
    for name, (sampler, options) in toys.items():
        seconds, report = timed(sampler, **options)
        print(f"{name}: {report.verdict.value} ({seconds:.1f} s, {len(report.tests)} tests)", flush=True)
        for test in report.rejected_tests:
            result = test.result
            print(f"    {test.name}, {test.context}: p = {result.pvalue:.2g}, TV {result.tv:.3f}, detectable "
                  f"{result.min_detectable_tv:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--only", choices=["cost", "power"])
    args = parser.parse_args()
    if args.only != "power":
        cost(args.reps)
    if args.only != "cost":
        power()


if __name__ == "__main__":
    main()
