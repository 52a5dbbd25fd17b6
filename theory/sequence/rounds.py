"""Exact rational laws of whole speculative rounds (block, lifted/traversal verification).

``lifted_law`` integrates out drafting and verification together, node by node: a node entered with
weight ``w`` runs a sequential node rule (``resispec.theory.common.sequential``) on ``p' = (w p, 1 - w)``,
``q' = (q, 0)`` (the last token is the fail token), drawing each child from the rule's draft as it
goes (exactly the tree's i.i.d. or without-replacement drafting), and where the rule would accept
child x with probability ``a`` it enters x's subtree with weight ``a``. The result is the
sub-probability law of the emitted sequence (continued by the target), whose mass is the node's
success probability. ``block_chain_law`` is block verification's closed form over every drafted chain.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable
from fractions import Fraction

from resispec.theory.common.arith import Exact
from resispec.theory.common.exact import Law, pos
from resispec.theory.common.sequential import SequentialRule
from resispec.theory.sequence.tree import Model, Prefix, SeqLaw

NodeRule = Callable[[Law, Law, int], SequentialRule]


def add(out: SeqLaw, key: tuple[int, ...], value: Fraction) -> None:
    if value:
        out[key] = out.get(key, Fraction(0)) + value


def lifted_law(model: Model, rule: NodeRule, k: int) -> SeqLaw:
    """The law of one round of the lift of ``rule`` (k children per node, ``model.depth`` levels),
    continued by target sampling to ``depth + 1`` tokens."""
    V = model.V
    memo: dict[tuple[Prefix, Fraction], SeqLaw] = {}

    def enter(v: Prefix, w: Fraction) -> SeqLaw:
        """Sub-probability law of what node v's subtree emits when entered with weight w."""
        left = model.depth - len(v)
        if left == 0:  # a leaf: success with probability w, then the bonus token
            return {(y,): w * model.p[v][y] for y in range(V) if w * model.p[v][y]}
        if (v, w) in memo:
            return memo[(v, w)]
        node = rule(tuple(w * x for x in model.p[v]) + (1 - w,), tuple(model.q[v]) + (Fraction(0),), k)

        def steps(state: Hashable, remaining: int) -> SeqLaw:
            out: SeqLaw = {}
            if remaining == 0:
                residual = node.residual(state)
                for y in range(V):  # the fail token (index V) emits nothing: v fails
                    for rest, prob in model.target((*v, y), left).items():
                        add(out, (y, *rest), residual[y] * prob)
                return out
            draft = node.draft(state)
            for x in range(V):
                if not draft[x]:
                    continue
                child = enter((*v, x), node.accept(state, x))
                for seq, prob in child.items():
                    add(out, (x, *seq), draft[x] * prob)
                failed = 1 - sum(child.values(), Fraction(0))
                if failed:
                    for seq, prob in steps(node.reject(state, x), remaining - 1).items():
                        add(out, seq, draft[x] * failed * prob)
            return out

        memo[(v, w)] = steps(node.start, k)
        return memo[(v, w)]

    return enter((), Fraction(1))


def block_plan(model: Model, chain: Prefix) -> tuple[list[Fraction], list[Fraction], list[Law]]:
    """Block verification on one drafted chain: weights ``w_i``, acceptances ``h_i`` (``h_0 = 1``) and
    the law emitted at node i (the weighted residual ``norm((w_i p_i - q_i)+)``, ``p`` at the leaf)."""
    g = len(chain)
    w, h, emitted = [Fraction(1)], [Fraction(1)], []
    for i in range(g + 1):
        v = chain[:i]
        if i == g:
            emitted.append(tuple(model.p[v]))
            break
        p, q = model.p[v], model.q[v]
        residual = [pos(w[i] * a - b) for a, b in zip(p, q)]
        r = sum(residual, Fraction(0))
        s = sum((min(b, w[i] * a) for a, b in zip(p, q)), Fraction(0))
        emitted.append(tuple(x / r for x in residual) if r else tuple(p))
        if i > 0:
            h.append(r / (1 - s) if 1 - s else Fraction(1))
        w.append(min(Fraction(1), w[i] * p[chain[i]] / q[chain[i]]))
    if g > 0:
        h.append(w[g])
    return w, h, emitted


def block_chain_law(model: Model, naive: bool = False) -> tuple[SeqLaw, dict[Prefix, Fraction]]:
    """Block verification over every drafted chain of length ``model.depth``: the law of the emitted
    sequence continued to ``depth + 1`` tokens, and the alive mass ``A(s) = P(accepted path starts
    with s)`` for every drafted prefix s. ``naive``: the control (accept node i with the bare weight
    ``w_i``, emit ``norm((p - q)+)``)."""
    g, V = model.depth, model.V
    law: SeqLaw = {}
    alive: dict[Prefix, Fraction] = {}
    for chain in itertools.product(range(V), repeat=g):
        drafted = Fraction(1)
        for i in range(g):
            drafted *= model.q[chain[:i]][chain[i]]
        if not drafted:
            continue
        w, h, emitted = block_plan(model, chain)
        if naive:
            h = w[:]
            h[0] = Fraction(1)
            emitted = [normalise_pos(model.p[chain[:i]], model.q[chain[:i]]) for i in range(g)] + [emitted[g]]
        survive = Fraction(1)
        for i in range(g, -1, -1):
            stop = drafted * survive * h[i]
            for j in range(1, i + 1):
                alive[chain[:j]] = alive.get(chain[:j], Fraction(0)) + stop
            for y in range(V):
                for rest, prob in model.target((*chain[:i], y), g - i).items():
                    add(law, (*chain[:i], y, *rest), stop * emitted[i][y] * prob)
            survive *= 1 - h[i]
    return law, alive


def normalise_pos(p: Law, q: Law) -> Law:
    residual = [pos(a - b) for a, b in zip(p, q)]
    total = sum(residual, Fraction(0))
    return tuple(x / total for x in residual) if total else tuple(p)


__all__ = ["Exact", "block_chain_law", "block_plan", "lifted_law"]
