"""The law of one round of tree verification as a joint law, enumerated flat: every drafted tree (the
children of every logical node, by the engine's drafting scheme) times every outcome of the node
decisions along the walk, without the per-node recursion of ``resispec.theory.sequence.tree.tree_law``.

The engine (``resispec.engine.decode.expand.expand_tree``, ``resispec.engine.decode.decoding``) drafts the whole tree
before verifying:
each logical node's children are one draw of its verifier's scheme from ``q(.|path)`` (i.i.d., without
replacement, or top-k), with the drafting generator; equal root-to-node paths share a model row but
keep their own children. The walk then decides node by node, each decision a function of that node's
``p``, ``q``, children and its own verification uniforms only (``NodeVerifier.verify``). Here the same
round is enumerated exactly: ``drafted_trees`` lists every tree with its probability (children drawn per
logical node, or once per distinct path, ``SHARING``), ``decision_law`` the outcomes of one node's
verifier given its children, and ``round_law`` the emitted sequence, continued by the target to
``depth + 1`` tokens.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterator
from fractions import Fraction
from typing import TYPE_CHECKING

from resispec.theory.common.exact import Law
from resispec.theory.common.sequential import SequentialRule
from resispec.theory.topk.topk import top_candidates

if TYPE_CHECKING:  # resispec.theory.sequence.tree imports this module for its check
    from resispec.theory.sequence.tree import Model, NodeRule, SeqLaw

Children = tuple[int, ...]
DraftLaw = Callable[[Law, int], dict[Children, Fraction]]
Slot = tuple[int, ...]  # a logical node: the child slots from the root
Outcome = tuple[str, int]  # ("accept", slot) or ("emit", token)


def iid_children(q: Law, k: int) -> dict[Children, Fraction]:
    """``k`` independent draws: ``P(x_1..x_k) = prod_i q(x_i)``."""
    support = [x for x, v in enumerate(q) if v]
    out = {}
    for xs in itertools.product(support, repeat=k):
        prob = Fraction(1)
        for x in xs:
            prob *= q[x]
        out[xs] = prob
    return out


def wor_children(q: Law, k: int) -> dict[Children, Fraction]:
    """Successive sampling without replacement: ``P(x_1..x_k) = prod_i q(x_i) / (1 - q(x_1..x_{i-1}))``."""
    support = [x for x, v in enumerate(q) if v]
    out = {}
    for xs in itertools.permutations(support, k):
        prob, used = Fraction(1), Fraction(0)
        for x in xs:
            prob *= q[x] / (1 - used)
            used += q[x]
        out[xs] = prob
    return out


def topk_children(q: Law, k: int) -> dict[Children, Fraction]:
    """The ``k`` most probable draft tokens (ties by token id), with probability one."""
    return {top_candidates(q, k): Fraction(1)}


SCHEMES: dict[str, DraftLaw] = {"iid": iid_children, "wor": wor_children, "topk": topk_children}


def decision_law(rule: SequentialRule, children: Children) -> dict[Outcome, Fraction]:
    """One node's verifier given its drawn children: slot ``j`` is accepted with probability
    ``prod_{i<j} (1 - a_i) a_j`` (``a_i`` the rule's acceptance in the state after rejecting the earlier
    slots); after rejecting all, token ``y`` is emitted with ``prod_i (1 - a_i) residual(y)``."""
    out: dict[Outcome, Fraction] = {}
    state, alive = rule.start, Fraction(1)
    for slot, x in enumerate(children):
        a = rule.accept(state, x)
        if a:
            out[("accept", slot)] = alive * a
        alive *= 1 - a
        if not alive:
            return out
        state = rule.reject(state, x)
    for y, v in enumerate(rule.residual(state)):
        if v:
            out[("emit", y)] = alive * v
    return out


def path_of(tree: dict[Slot, Children], slot: Slot) -> tuple[int, ...]:
    """The tokens from the root to logical node ``slot``."""
    return tuple(tree[slot[:i]][s] for i, s in enumerate(slot))


Sharing = Callable[[dict[Slot, Children], Slot], Hashable]
SHARING: dict[str, Sharing] = {
    "per node": lambda tree, slot: slot,  # the engine: every logical node draws its own children
    "per path": path_of,  # equal paths (merged equal siblings) share one draw of their subtrees
}
SHARED_BY_LEVEL: Sharing = lambda tree, slot: len(slot)  # noqa: E731 -- breaks the hypothesis (control)


def drafted_trees(model: Model, draft: DraftLaw, k: int,
                  sharing: Sharing) -> Iterator[tuple[dict[Slot, Children], Fraction]]:
    """Every drafted tree of depth ``model.depth`` with ``k`` children per node and its probability.

    Level by level, the logical nodes with equal ``sharing(tree, node)`` share one draw of
    ``draft(q(.|path), k)`` at the path of the first of them, independent of every other draw."""
    trees: list[tuple[dict[Slot, Children], Fraction]] = [({}, Fraction(1))]
    for depth in range(model.depth):
        grown = []
        for tree, prob in trees:
            level = list(itertools.product(range(k), repeat=depth))
            keys = {slot: sharing(tree, slot) for slot in level}
            distinct = list(dict.fromkeys(keys.values()))
            laws = [draft(model.q[path_of(tree, next(s for s in level if keys[s] == key))], k) for key in distinct]
            for draws in itertools.product(*(law.items() for law in laws)):
                chosen = dict(zip(distinct, draws))
                extended = {**tree, **{slot: chosen[keys[slot]][0] for slot in level}}
                weight = prob
                for _, w in draws:
                    weight *= w
                grown.append((extended, weight))
        trees = grown
    return iter(trees)


def round_law(model: Model, node_rule: NodeRule, draft: DraftLaw, k: int,
              sharing: Sharing = SHARING["per node"]) -> SeqLaw:
    """The exact law of the emitted sequence of one round, continued by target sampling to
    ``depth + 1`` tokens, summed over every drafted tree and every walk through it."""
    out: SeqLaw = {}
    rules: dict[tuple[int, ...], SequentialRule] = {}

    def add(sequence: tuple[int, ...], prob: Fraction) -> None:
        for rest, tail in model.target(sequence, model.depth + 1 - len(sequence)).items():
            key = sequence + rest
            out[key] = out.get(key, Fraction(0)) + prob * tail

    for tree, weight in drafted_trees(model, draft, k, sharing):
        walks = [((), weight)]  # (logical node reached, probability of the walk so far, tree included)
        while walks:
            slot, prob = walks.pop()
            path = path_of(tree, slot)
            if len(slot) == model.depth:  # a leaf was accepted: the bonus token from p at the leaf
                for y, v in enumerate(model.p[path]):
                    add(path + (y,), prob * v)
                continue
            if path not in rules:
                rules[path] = node_rule(model.p[path], model.q[path], k)
            for (kind, value), v in decision_law(rules[path], tree[slot]).items():
                if kind == "accept":
                    walks.append((slot + (value,), prob * v))
                else:
                    add(path + (value,), prob * v)
    return out
