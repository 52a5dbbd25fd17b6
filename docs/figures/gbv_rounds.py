"""gbv on real-model rounds: K i.i.d. paths of SmolLM2-135M-Instruct against its trained draft (docs/verifiers/gbv.md).

Run from the repository root on round logs of K-path trees (``resispec replay --drafting iid --tree K,1,...,1``);
the rounds of every log are pooled, and the JSON goes to ``docs/figures/gbv_rounds_k<K>.json``::

    python3 docs/figures/gbv_rounds.py LOG.npz [LOG.npz ...]

Every verifier's exact ``E[accepted draft tokens | tree]`` on the same logged trees (``resispec.sim.rounds``), paired
differences with standard errors, and ``block (path 1)``: block verification of the first path alone, what the
same draft budget's first path gives a single-path verifier (the paper's BV baseline). Also the share of rounds
whose paths share a prefix (where gbv's prefix trie merges paths).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from resispec.formats.atomic import atomic_write_text
from resispec.formats.pairs import read_logged
from resispec.formats.stats import standard_error
from resispec.sequence import get_round_verifier, round_tree
from resispec.sequence.gbv import prefix_trie
from resispec.sim.rounds import LoggedRound, logged_rounds

HERE = Path(__file__).resolve().parent
BASELINES = ("traversal", "traversal_resispec", "block (path 1)")
VERIFIERS = ("traversal", "rrs", "resispec", "pooled", "traversal_resispec", "gbv")


def first_path(logged: LoggedRound) -> LoggedRound:
    """The chain root -> first leaf under the root's first child, with its p and q rows."""
    tree = logged.tree
    node, path = 0, [0]
    while tree.children[node]:
        node = tree.children[node][0]
        path.append(node)
    chain = round_tree(np.arange(-1, len(path) - 1), tree.tokens[path], logged.p.shape[1])
    return LoggedRound(chain, logged.p[path], logged.q[path[:-1]])


def score(paths: list[str]) -> dict:
    verifiers = {name: get_round_verifier(name) for name in VERIFIERS}
    block = get_round_verifier("block")
    values: dict[str, list[float]] = {name: [] for name in (*VERIFIERS, "block (path 1)")}
    merged, paths_per_round = 0, set()
    for logged in (r for path in paths for r in logged_rounds(read_logged(path))):
        for name, verifier in verifiers.items():
            values[name].append(verifier.law(logged.tree, logged.p, logged.q).expected_accepted(logged.tree))
        chain = first_path(logged)
        values["block (path 1)"].append(block.law(chain.tree, chain.p, chain.q).expected_accepted(chain.tree))
        merged += prefix_trie(logged.tree)[0].num_nodes < logged.tree.num_nodes
        paths_per_round.add(len(logged.tree.children[0]))
    arrays = {name: np.array(v) for name, v in values.items()}
    rows = {name: {"mean": float(a.mean()), "se": standard_error(a),
                   "paired": {base: [float((a - arrays[base]).mean()), standard_error(a - arrays[base])]
                              for base in BASELINES}} for name, a in arrays.items()}
    return {"logs": paths, "paths": sorted(paths_per_round), "rounds": int(arrays["gbv"].size),
            "rounds_with_shared_prefix": merged, "rows": rows}


def markdown(report: dict) -> str:
    lines = [f"{report['rounds']} rounds, {report['rounds_with_shared_prefix']} with paths sharing a prefix", "",
             "| verifier | E[accepted] | " + " | ".join(f"- {base} (paired)" for base in BASELINES) + " |",
             "| --- | --- |" + " --- |" * len(BASELINES)]
    for name, row in report["rows"].items():
        cells = [f"{d:+.4f} +- {se:.4f}" for d, se in row["paired"].values()]
        lines.append(f"| {name} | {row['mean']:.4f} +- {row['se']:.4f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    result = score(sys.argv[1:])
    name = f"gbv_rounds_k{'_'.join(map(str, result['paths']))}.json"
    atomic_write_text(HERE / name, json.dumps(result, indent=1) + "\n")
    print(markdown(result))
