"""gbv on real-model rounds: K i.i.d. paths of SmolLM2-135M-Instruct against its trained draft (docs/verifiers/gbv.md).

Run from the repository root on a round log of K-path trees (``resispec replay --drafting iid --tree K,1,...,1``)::

    python3 docs/figures/gbv_rounds.py LOG.npz [OUT.json]

Every verifier's exact ``E[accepted draft tokens | tree]`` on the same logged trees (``resispec.sim.rounds``), paired
differences with standard errors, and ``block (path 1)``: block verification of the first path alone, what the
same draft budget's first path gives a single-path verifier (the paper's BV baseline). Also the share of rounds
whose paths share a prefix (where gbv's prefix trie merges paths).
"""

from __future__ import annotations

import json
import sys

import numpy as np

from resispec.formats.pairs import read_logged
from resispec.formats.stats import standard_error
from resispec.sequence import get_round_verifier, round_tree
from resispec.sequence.gbv import prefix_trie
from resispec.sim.rounds import LoggedRound, logged_rounds

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


def score(path: str) -> dict:
    verifiers = {name: get_round_verifier(name) for name in VERIFIERS}
    block = get_round_verifier("block")
    values: dict[str, list[float]] = {name: [] for name in (*VERIFIERS, "block (path 1)")}
    merged = 0
    for logged in logged_rounds(read_logged(path)):
        for name, verifier in verifiers.items():
            values[name].append(verifier.law(logged.tree, logged.p, logged.q).expected_accepted(logged.tree))
        chain = first_path(logged)
        values["block (path 1)"].append(block.law(chain.tree, chain.p, chain.q).expected_accepted(chain.tree))
        merged += prefix_trie(logged.tree)[0].num_nodes < logged.tree.num_nodes
    arrays = {name: np.array(v) for name, v in values.items()}
    rows = {name: {"mean": float(a.mean()), "se": standard_error(a),
                   "minus_traversal": float((a - arrays["traversal"]).mean()),
                   "minus_traversal_se": standard_error(a - arrays["traversal"]),
                   "minus_block": float((a - arrays["block (path 1)"]).mean()),
                   "minus_block_se": standard_error(a - arrays["block (path 1)"])} for name, a in arrays.items()}
    return {"log": path, "rounds": int(arrays["gbv"].size), "rounds_with_shared_prefix": merged, "rows": rows}


def markdown(report: dict) -> str:
    lines = [f"{report['rounds']} rounds, {report['rounds_with_shared_prefix']} with paths sharing a prefix",
             "", "| verifier | E[accepted] | - traversal (paired) | - block on path 1 (paired) |",
             "| --- | --- | --- | --- |"]
    for name, row in report["rows"].items():
        lines.append(f"| {name} | {row['mean']:.4f} +- {row['se']:.4f} | {row['minus_traversal']:+.4f} +- "
                     f"{row['minus_traversal_se']:.4f} | {row['minus_block']:+.4f} +- {row['minus_block_se']:.4f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    result = score(sys.argv[1])
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as handle:
            json.dump(result, handle, indent=1)
    print(markdown(result))
