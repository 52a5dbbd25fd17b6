"""gbv, greedy multi-path block verification of K i.i.d. drafted paths over their prefix trie
(``resispec/sequence/gbv.py``; our greedy rule for the setting of Thomas & Pal, arXiv 2602.16961): exact.

Exact laws here are computed over every K-tuple of drafted paths, each path's trie verified by the lift of
rrs_wor (``resispec.theory.rejection.rrs_wor.SPSChainWOR`` on ``p' = (w p, 1 - w)``) in exact rationals.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from fractions import Fraction

from resispec.theory.common.exact import Law
from resispec.theory.common.sequential import SequentialRule
from resispec.theory.registry import Outcome, Theorem, tally
from resispec.theory.rejection.rrs_wor import SPSChainWOR
from resispec.theory.rejection.sps import SPSChain
from resispec.theory.sequence.rounds import add, block_chain_law
from resispec.theory.sequence.tree import Exact, Model, Prefix, SeqLaw

NodeRule = Callable[[Law, Law, int], SequentialRule]
RULE: NodeRule = lambda p, q, k: SPSChainWOR(p, q, k, Exact())  # noqa: E731
CONTROL: NodeRule = lambda p, q, k: SPSChain(p, q, k, Exact())  # noqa: E731  the i.i.d. residual on distinct children
INSTANCES = ((2, 2, 2), (3, 2, 2), (2, 3, 2), (2, 2, 3), (3, 1, 3), (3, 2, 3))  # (V, path length, K)
SEEDS = (0, 1)


def trie_children(paths: tuple[Prefix, ...]) -> dict[Prefix, list[int]]:
    """Each trie node's distinct next tokens, in order of first appearance in draw order (breadth first, path
    order within a depth: the engine's numbering)."""
    children: dict[Prefix, list[int]] = {}
    for depth in range(len(paths[0])):
        for path in paths:
            tokens = children.setdefault(path[:depth], [])
            if path[depth] not in tokens:
                tokens.append(path[depth])
    return children


def trie_law(model: Model, children: dict[Prefix, list[int]], rule: NodeRule) -> SeqLaw:
    """The law of one gbv round on a given trie, continued by the target to ``depth + 1`` tokens."""
    V = model.V

    def enter(v: Prefix, w: Fraction) -> SeqLaw:
        left = model.depth - len(v)
        if left == 0:
            return {(y,): w * model.p[v][y] for y in range(V) if w * model.p[v][y]}
        node = rule(tuple(w * x for x in model.p[v]) + (1 - w,), tuple(model.q[v]) + (Fraction(0),),
                    len(children[v]))
        out: SeqLaw = {}
        state, reach = node.start, Fraction(1)
        for x in children[v]:
            child = enter((*v, x), node.accept(state, x))
            for seq, prob in child.items():
                add(out, (x, *seq), reach * prob)
            reach *= 1 - sum(child.values(), Fraction(0))
            if not reach:  # the subtree succeeds surely: no rejection state to reach
                return out
            state = node.reject(state, x)
        residual = node.residual(state)
        for y in range(V):  # the fail token (index V) emits nothing: v fails
            for rest, prob in model.target((*v, y), left).items():
                add(out, (y, *rest), reach * residual[y] * prob)
        return out

    return enter((), Fraction(1))


def gbv_law(model: Model, k: int, rule: NodeRule = RULE) -> SeqLaw:
    """gbv's round law over every K-tuple of i.i.d. drafted paths of length ``model.depth``."""
    chains = []
    for chain in itertools.product(range(model.V), repeat=model.depth):
        mass = Fraction(1)
        for i in range(model.depth):
            mass *= model.q[chain[:i]][chain[i]]
        chains.append((chain, mass))
    law: SeqLaw = {}
    for drawn in itertools.product(chains, repeat=k):
        mass = Fraction(1)
        for _, m in drawn:
            mass *= m
        for seq, prob in trie_law(model, trie_children(tuple(c for c, _ in drawn)), rule).items():
            add(law, seq, mass * prob)
    return law


def dedup_is_stopped_wor(V: int, k: int, q: Law) -> bool:
    """The lemma: among k i.i.d. draws from q, given everything seen up to the j-th distinct token (which
    tokens, at which draws) and that a (j+1)-th distinct token comes, it has law q restricted to the unseen
    tokens, normalised; so the distinct tokens are a without-replacement sequence stopped independently of
    the next one's identity."""
    joint: dict[tuple, dict[int, Fraction]] = {}
    for draws in itertools.product(range(V), repeat=k):
        mass = Fraction(1)
        for x in draws:
            mass *= q[x]
        seen: list[int] = []
        for position, x in enumerate(draws):
            if x in seen:
                continue
            past = (tuple(seen), tuple(draws[:position]))  # the history up to the previous distinct token
            joint.setdefault(past, {})
            joint[past][x] = joint[past].get(x, Fraction(0)) + mass
            seen.append(x)
    for (seen, _), law in joint.items():
        total = sum(law.values(), Fraction(0))
        unseen = 1 - sum((q[x] for x in set(seen)), Fraction(0))
        if any(law.get(x, Fraction(0)) / total != (0 if x in seen else q[x] / unseen) for x in range(V)):
            return False
    return True


def check_exact() -> Outcome:
    bad, caught, runs, block_bad = [], 0, 0, []
    lemma = [dedup_is_stopped_wor(V, k, Model(V, 0, seed=2700 + V * 10 + k).q[()])
             for V, k in ((2, 2), (2, 3), (3, 2), (3, 3), (4, 3))]
    for V, depth, k in INSTANCES:
        for seed in SEEDS:
            model = Model(V, depth, seed=2600 + 10 * seed + V + depth + k)
            target = model.target((), depth + 1)
            runs += 1
            if gbv_law(model, k) != target:
                bad.append(f"V={V}, {k} paths of {depth}, seed {seed}: sequence law differs from the target's")
            caught += gbv_law(model, k, CONTROL) != target
            if gbv_law(model, 1) != block_chain_law(model)[0]:
                block_bad.append(f"V={V}, a path of {depth}, seed {seed}: K = 1 differs from block verification")
    derivation = """
**The rule.** K paths of length L are drafted independently from the draft model. Merge the paths that share
a prefix into the *prefix trie*: a trie node s stands for every drafted node with token path s; its children
are the distinct next tokens of the paths through s, in order of first appearance in draw order. Verify the
trie by the lift of rrs_wor (``traversal_wor`` on the trie): a node s entered with weight w runs rrs_wor on
`p' = (w p(.|s), 1 - w)`, `q' = (q(.|s), 0)` over its distinct children, each child's subtree (all the paths
through it) standing in for its acceptance coin. Read path by path this is greedy block verification: path 1
is block-verified; each later path is block-verified against the target conditioned on every earlier
failure (the residuals its predecessors left at the nodes it passes through), resuming at the deepest node it
shares with an earlier path. K = 1 is block verification (the lift of sps on a chain).

**Lemma (distinct i.i.d. draws are a stopped without-replacement sequence).** Let `x_1..x_m` be i.i.d. from
q and `c_1, c_2, ...` their distinct values in order of first appearance. Fix everything seen up to `c_j`
(the values `S = {c_1..c_j}` and the draws so far). Each later draw lands in S, or outside it with law
`q` restricted to the complement of S, normalised, independently of the earlier draws. So *whether* a
`c_(j+1)` comes depends only on which later draws land in S, and *given* that it comes, `c_(j+1)` has law
`norm(q on S^c)`, the without-replacement draft after `c_1..c_j`, independently of the stopping. rrs_wor
is exact however many candidates it gets, and after every step its residual state is exact on its own (the
rrs_wor invariant: the state's residual target is the law the rest of the verification emits, whether a
candidate comes or not); so rrs_wor on `c_1, c_2, ...`, stopped when they run out, emits `p'` exactly.

**Exactness.** At a trie node s with n paths through it, the paths' next tokens are n i.i.d. draws from
`q(.|s)` (the paths were drafted independently), and given how many paths go through a child c, their
continuations below c are i.i.d. draws from `q(.|sc)`: the same situation one level down. By the lemma
the node's distinct children are the drafting rrs_wor expects, stopped independently of the next identity.
Induction from the leaves as in ``traversal.lift_exact``: a subtree entered with weight a succeeds with
probability a on average over its paths' continuations (given their number), and its success is independent
of the later siblings given the past. So the node emits `p'`, the mass `w p(y|s)` flows into y, `1 - w`
fails to the parent, and at the root (`w = 1`) the round is exact. The argument needs the children's draw
order to be fixed independently of the token values (the drafted tree's node order, internal nodes first);
paths of several lengths merge the same way (a trie node is internal iff one of its drafted nodes is).

**The control** ``gbv_naive`` runs rrs (the i.i.d. residual, draft q unchanged after a failure) on the
distinct children: a later distinct child is never a tried token, so its law given the failures is not q.
"""
    checked = f"""
- Exact rationals, the lemma: for (V, k) in (2, 2), (2, 3), (3, 2), (3, 3), (4, 3), every history of k
  i.i.d. draws up to a distinct token, the next distinct token's conditional law is q on the unseen tokens,
  normalised: {"holds" if all(lemma) else "FAILS"} ({sum(lemma)} of {len(lemma)}).
- Exact rationals, the round: {runs} seeded model pairs, `(V, path length, K)` in
  {", ".join(map(str, INSTANCES))} (two seeds each; every K-tuple of drafted paths enumerated, the trie
  verified in rationals, the output continued by the target): gbv's sequence law equals the target's;
  {tally(bad)}. K = 1 equals block verification's law: {tally(block_bad)}.
- Negative control: ``gbv_naive`` differs from the target on {caught} of the {runs} pairs.
"""
    return Outcome(all(lemma) and not bad and not block_bad and caught > 0, derivation, checked)


THEOREMS = [
    Theorem(
        name="gbv.exact",
        statement=("Greedy multi-path block verification of K i.i.d. paths over their prefix trie (the lift of "
                   "rrs_wor at every trie node) is exact at the sequence level; K = 1 is block verification."),
        method="hand proof (lemma: distinct i.i.d. draws are a stopped WOR sequence; lift induction) + "
               "exact rational arithmetic",
        check=check_exact,
    )
]
