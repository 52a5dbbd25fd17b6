"""What the round LP's optimum does that traversal does not, on the nine root-WOR instances of the multipath gap
table (V = 3, trees 2,1 / 3,1 / 2,1,1, model pairs of seeds 300-302; docs/sequence.md, "Multi-path rounds").

The **sibling-causal LP** is the round LP (``resispec.sequence.round_lp.round_system``) with one more family of
rows: a verifier's chance of ending at node n with token y, for n under the root's j-th drawn child (j < K), may
depend only on the first j root children and their subtrees, ``x[t, n, y] / P(t) = x[t', n, y] / P(t')`` for
trees t, t' that agree there. Every rule that decides the root's children one after another in draw order,
each on its own subtree and the failures before it (traversal_wor, traversal_resispec_wor, any lift of a
sequential node rule), satisfies it, so its optimum bounds them all; the full LP minus it is the value of
reading *later* siblings' subtrees before committing to an earlier one. Also printed: the accepted depth's law
and the share of rounds ending under the first drawn root child, for the LP's optimal vertex (HiGHS's; the
optimum need not be unique) and for traversal_wor, and that share's range over every plan within 1e-5 of the
optimum. About 2 minutes. ``python3 docs/figures/round_lp_probe.py``.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix, vstack

from resispec.audit.round_law import exact_round_law
from resispec.sequence import get_round_verifier
from resispec.sequence.enumeration import dirichlet_conditional
from resispec.sequence.round_lp import RoundSystem, round_system, solve_round_lp

TREES, SEEDS = ((2, 1), (3, 1), (2, 1, 1)), (300, 301, 302)


def root_child(tree, node: int) -> int:
    """The index (1-based, draw order) of the root child above ``node``."""
    return tree.path(node)[1]


def sibling_causal_rows(system: RoundSystem, k: int):
    """The rows tying ``x[t, n, y] / P(t)`` across trees that agree on root children 1..j and their subtrees."""
    vocab = system.rounds[0].p.shape[1]
    offsets = np.concatenate([[0], np.cumsum([d.tree.num_nodes * vocab for d in system.rounds])])
    rows, cols, values = [], [], []
    for j in range(1, k):
        groups: dict[tuple[int, ...], list[int]] = {}
        for t, drafted in enumerate(system.rounds):
            tree = drafted.tree
            seen = tuple(int(tree.tokens[n]) for n in range(1, tree.num_nodes) if root_child(tree, n) <= j)
            groups.setdefault(seen, []).append(t)
        for members in groups.values():
            first, tree = members[0], system.rounds[members[0]].tree
            for t in members[1:]:
                for n in (n for n in range(1, tree.num_nodes) if root_child(tree, n) == j):
                    for y in range(vocab):
                        row = len(rows) // 2
                        rows += [row, row]
                        cols += [offsets[t] + n * vocab + y, offsets[first] + n * vocab + y]
                        values += [1 / system.rounds[t].probability, -1 / system.rounds[first].probability]
    return coo_matrix((values, (rows, cols)), shape=(len(rows) // 2, system.matrix.shape[1])).tocsc()


def first_child_range(system: RoundSystem, value: float) -> tuple[float, float]:
    """The least and the most chance of ending under the first drawn root child over every plan within 1e-5 of the
    optimum (the round LP with its objective held at ``value`` - 1e-5: at 1e-6 HiGHS calls tree 2,1,1 s = 300
    infeasible)."""
    vocab = system.rounds[0].p.shape[1]
    under = np.concatenate([np.repeat([n > 0 and root_child(d.tree, n) == 1 for n in range(d.tree.num_nodes)], vocab)
                            for d in system.rounds]).astype(float)
    bounds = []
    for sign in (1.0, -1.0):
        result = linprog(sign * under, A_ub=-system.gain[None, :], b_ub=[-(value - 1e-5)], A_eq=system.matrix[1:],
                         b_eq=system.rhs[1:], bounds=(0, None), method="highs")
        if result.status != 0:
            raise RuntimeError(f"the range LP did not solve: {result.message}")
        bounds.append(sign * result.fun)
    return bounds[0], bounds[1]


def depth_law(rounds, stops) -> tuple[np.ndarray, float]:
    """The accepted depth's law and the chance the round ends under the first drawn root child."""
    law, first = np.zeros(rounds[0].tree.depths.max() + 1), 0.0
    for drafted, stop in zip(rounds, stops):
        np.add.at(law, drafted.tree.depths, stop)
        first += sum(stop[n] for n in range(1, drafted.tree.num_nodes) if root_child(drafted.tree, n) == 1)
    return law, first


if __name__ == "__main__":
    print("| tree | seed | best rule | sibling-causal LP | round LP | look-ahead share of the gap | "
          "depth law: LP / traversal_wor | ends under child 1: LP / traversal_wor | ... over every plan within 1e-5 "
          "of the optimum |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for branching in TREES:
        for seed in SEEDS:
            models = (dirichlet_conditional(3, 2 * seed), dirichlet_conditional(3, 2 * seed + 1), 3, branching)
            system = round_system(*models, drafting="wor")
            causal = sibling_causal_rows(system, branching[0])
            result = linprog(-system.gain, A_eq=vstack([system.matrix[1:], causal]),
                             b_eq=np.concatenate([system.rhs[1:], np.zeros(causal.shape[0])]), bounds=(0, None),
                             method="highs")
            plan = solve_round_lp(*models, drafting="wor")
            rules = {name: exact_round_law(name, *models).expected_accepted
                     for name in ("traversal_wor", "traversal_resispec_wor")}
            best = max(rules, key=rules.get)
            traversal = get_round_verifier("traversal_wor")
            lp_law, lp_first = depth_law(plan.rounds, [x.sum(axis=1) for x in plan.plans])
            tw_law, tw_first = depth_law(plan.rounds, [d.probability * traversal.law(d.tree, d.p, d.q).stop
                                                       for d in plan.rounds])
            share = (plan.value + result.fun) / (plan.value - rules[best])
            low, high = first_child_range(system, plan.value)
            print(f"| {','.join(map(str, branching))} | {seed} | {rules[best]:.4f} ({best}) | {-result.fun:.4f} | "
                  f"{plan.value:.4f} | {100 * share:.0f} % | {' '.join(f'{v:.3f}' for v in lp_law)} / "
                  f"{' '.join(f'{v:.3f}' for v in tw_law)} | {lp_first:.3f} / {tw_first:.3f} | {low:.3f}-{high:.3f} |",
                  flush=True)
