"""The sampling audits of gbv (docs/verifiers/gbv.md): gbv at tree level on trees 3,1 and 2,1,1 with its exact
acceptance claimed (``rule="gbv"``), and the control gbv_naive on 3,1, each with the audit's default samples per
context. About 10 minutes on one core. Run from the repository root: ``python3 docs/figures/gbv_audit.py``.
"""

from __future__ import annotations

import time

from resispec.audit.sampler import audit_sampler, zoo_sampler

RUNS = (("gbv", (3, 1)), ("gbv", (2, 1, 1)), ("gbv_naive", (3, 1)))

if __name__ == "__main__":
    for name, branching in RUNS:
        start = time.perf_counter()
        report = audit_sampler(zoo_sampler(name, "tree", branching, seed=1), "tree", branching=branching,
                               rule="gbv" if name == "gbv" else None, seed=0, progress=False)
        tests = [t for t in report.to_dict()["tests"] if t["tested"] and t["pvalue"] is not None]
        worst = min(tests, key=lambda t: t["pvalue"])
        print(f"{name} tree {','.join(map(str, branching))}: {report.verdict.value}, {len(tests)} tests, "
              f"smallest p {worst['pvalue']:.2g} ({worst['name']}, {worst['context']}), "
              f"{time.perf_counter() - start:.0f} s", flush=True)
