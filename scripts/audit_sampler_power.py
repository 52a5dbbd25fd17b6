"""Measure the power table of docs/audit_sampler.md: how often each level rejects a sampler biased by epsilon.

The biased sampler is the zoo's rrs (exact) whose last emitted token is, with probability epsilon, replaced by a
draw from the processed target at T = 2 at that position (the same support, so the output contract holds and
only the statistics can see it). For a node the emitted law then errs from p by ``epsilon TV(p, p_T2)``; that TV
per context is printed too. Usage: ``PYTHONPATH=. python3 scripts/audit_sampler_power.py [--seeds 4]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from resispec.audit.sampler import audit_sampler, zoo_sampler
from resispec.processing import Processing, process_probs

HOT = Processing(2.0)


def biased(level: str, epsilon: float, seed: int, branching=(2, 2)):
    exact = zoo_sampler("rrs", level, branching if level == "tree" else None, seed=seed)
    rng = np.random.default_rng([seed, 99])

    def sampler(p, q, drafted):
        out = exact(p, q, drafted)
        for b in np.flatnonzero(rng.random(out.shape[0]) < epsilon):
            if level == "node":
                row = p[b]
                out[b] = rng.choice(row.size, p=process_probs(row, HOT))
                continue
            n = int((out[b] >= 0).sum()) - 1
            if level == "chain":
                row = p[b, n]
            else:
                path = np.flatnonzero((drafted[b, :, :n] == out[b, :n]).all(axis=1))[0]
                row = p[b, path, n]
            out[b, n] = rng.choice(row.size, p=process_probs(row, HOT))
        return out
    return sampler


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.03, 0.1, 0.3])
    parser.add_argument("--levels", nargs="+", default=["node", "chain", "tree"])
    args = parser.parse_args()
    options = {"node": dict(k=2), "chain": dict(gamma=4), "tree": dict(branching=(2, 2))}
    for level in args.levels:
        extra = options[level]
        for epsilon in args.epsilons:
            start, rejected, tests = time.perf_counter(), 0, {}
            for seed in range(args.seeds):
                report = audit_sampler(biased(level, epsilon, seed), level, seed=seed, **extra)
                rejected += report.verdict == "FAIL"
                for test in report.rejected_tests:
                    tests[test.name] = tests.get(test.name, 0) + 1
            print(f"{level:5}  epsilon {epsilon:<5}  rejected {rejected}/{args.seeds}  by {tests}  "
                  f"({(time.perf_counter() - start) / args.seeds:.1f} s per audit)", flush=True)


if __name__ == "__main__":
    main()
