"""Power of the per-request parameter audit (``--extras history processing --vary ...``) at the default samples.

Audits each toy of tests/resispec/audit/row_samplers.py (a parameter read from the wrong row, and its exact twins)
at gamma = 4, V = 6 with every group varied (``row_parameters.VARY``), and prints per toy the verdict, the row
parameter named ``FAIL``, the first-token test that moved most (its TV against the TV it detects) and the
rejected batch groups of a combination.

Usage: ``PYTHONPATH=. python3 scripts/audit_sampler_row_power.py [--samples N] [--only NAME ...]``.
"""

from __future__ import annotations

import argparse
import os
import time
from functools import partial

from resispec.audit.sampler import audit_sampler
from resispec.audit.sampler.row_parameters import VARY
from resispec.audit.sampling import DEFAULT_SAMPLES
from tests.resispec.audit import row_samplers, toy_samplers

PENALTIES = ("repetition_penalty", "presence_penalty", "frequency_penalty", "history")
TOYS = {
    "row 0's min-p": partial(row_samplers.first_row_chain, fields=("min_p",)),
    "row 0's penalties and history": partial(row_samplers.first_row_chain, fields=PENALTIES),
    "row 0's mask": partial(row_samplers.first_row_chain, fields=("allowed",)),
    "mask read per request": partial(row_samplers.mask_buffer_chain, per_request=True),
    "mask read per token (twin)": row_samplers.mask_buffer_chain,
    "exact": toy_samplers.processed_chain,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES)
    parser.add_argument("--only", nargs="+", choices=list(TOYS), default=list(TOYS))
    args = parser.parse_args()
    for name in args.only:
        start = time.perf_counter()
        report = audit_sampler(TOYS[name], "chain", gamma=4, inputs="logits", extras=["history", "processing"],
                               vary=tuple(VARY), samples=args.samples, progress=False)
        first = [t for t in report.tests if t.name == "first token" and t.result.tv is not None]
        worst = max(first, key=lambda t: t.result.tv - t.result.min_detectable_tv)
        named = [f"{key}: {line}" for key, line in report.row_parameters.items() if line.startswith("FAIL")]
        groups = [t.context for t in report.rejected_tests if t.context.startswith("[")]
        print(f"{name}: {report.verdict.value} in {time.perf_counter() - start:.0f} s (load "
              f"{os.getloadavg()[0]:.1f}); {named[0] if named else 'no row parameter FAIL'}; first token "
              f"{worst.context}: TV {worst.result.tv:.3f} vs detectable {worst.result.min_detectable_tv:.3f}; "
              f"rejected groups: {len(groups)} ({'; '.join(groups[:3])})", flush=True)


if __name__ == "__main__":
    main()
