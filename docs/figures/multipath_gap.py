"""Multi-path rounds: the round LP (the best any exact verifier can do) against every exact rule of the zoo, for
paths drawn without replacement and i.i.d. (docs/sequence.md, "Multi-path rounds").

Run from the repository root: ``python3 docs/figures/multipath_gap.py``. Writes ``docs/figures/multipath_gap.json``
and prints the table in Markdown. Models: ``dirichlet_conditional`` pairs over V = 3 (target seed 2s, draft seed
2s + 1, s = 300, 301, 302: the round LP test's instances), trees with K = 2 or 3 root children each continued by a
chain ("K paths"); every value is the exact expected number of accepted draft tokens per round
(`resispec.audit.round_law.exact_round_law`; the LP by HiGHS, `resispec.sequence.round_lp`). About 4 minutes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from resispec.audit.round_law import exact_round_law
from resispec.formats.atomic import atomic_write_text
from resispec.sequence.enumeration import dirichlet_conditional
from resispec.sequence.round_lp import optimal_round_acceptance

HERE = Path(__file__).resolve().parent
VOCAB = 3
SEEDS = (300, 301, 302)
TREES = ((2, 1), (3, 1), (2, 1, 1))
RULES = {"wor": ("rrs_wor", "resispec_wor", "pooled_wor", "traversal_wor", "traversal_resispec_wor"),
         "iid": ("rrs", "resispec", "pooled", "traversal", "traversal_resispec", "gbv")}


def rows() -> list[dict]:
    table = []
    for branching in TREES:
        for seed in SEEDS:
            target, draft = dirichlet_conditional(VOCAB, 2 * seed), dirichlet_conditional(VOCAB, 2 * seed + 1)
            for drafting, names in RULES.items():
                values = {name: exact_round_law(name, target, draft, VOCAB, branching).expected_accepted
                          for name in names}
                best = max(values, key=values.get)
                optimum = optimal_round_acceptance(target, draft, VOCAB, branching, drafting=drafting)
                table.append({"tree": list(branching), "seed": seed, "drafting": drafting, "round_lp": optimum,
                              "rules": values, "best_rule": best, "gap": optimum - values[best]})
                print(f"tree {branching} seed {seed} {drafting}: LP {optimum:.4f}, best {best} {values[best]:.4f}",
                      file=sys.stderr, flush=True)
    return table


def markdown(table: list[dict]) -> str:
    lines = []
    for drafting, names in RULES.items():
        lines += [f"| tree | seed | {' | '.join(names)} | round LP | gap (best rule) |",
                  "| --- | --- |" + " --- |" * (len(names) + 2)]
        for row in (r for r in table if r["drafting"] == drafting):
            cells = [f"{row['rules'][name]:.4f}" for name in names]
            lines.append(f"| {','.join(map(str, row['tree']))} | {row['seed']} | {' | '.join(cells)} | "
                         f"{row['round_lp']:.4f} | {row['gap']:.4f} ({row['best_rule']}) |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    result = rows()
    atomic_write_text(HERE / "multipath_gap.json", json.dumps(result, indent=1) + "\n")
    print(markdown(result))
