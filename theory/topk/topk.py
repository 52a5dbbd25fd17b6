"""Theorem 5 -- topk (deterministic top-k candidates) is exact with acceptance ``p(C)``, the best
possible for a fixed candidate set ``C``.

Candidates: the ``k`` most probable draft tokens (ties by token id), drafted with probability one.
Accept ``x_1`` w.p. ``p(x_1)``; else zero ``x_1`` in the target, renormalise, accept ``x_2`` w.p. its new
mass; ...; all rejected: emit from ``p`` with ``C`` zeroed, renormalised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import sympy as sp

from resispec.theory.common.arith import Exact, Number, normalise
from resispec.theory.common.exact import instances
from resispec.theory.common.sequential import emit, exactness_problems
from resispec.theory.common.symbolic import display_eq, vanishes
from resispec.theory.registry import Outcome, Theorem, tally

State = tuple[tuple[Number, ...], int]


def top_candidates(q: Sequence[Fraction], k: int) -> tuple[int, ...]:
    """The ``k`` most probable draft tokens, ties broken by token id."""
    return tuple(sorted(range(len(q)), key=lambda x: (-q[x], x))[:k])


@dataclass(frozen=True)
class TopK:
    """topk; state: (current target ``r`` = ``p`` with earlier candidates zeroed and renormalised, step)."""

    p: Sequence[Number]
    q: Sequence[Number]
    k: int
    ar: object

    @property
    def candidates(self) -> tuple[int, ...]:
        return top_candidates(self.q, self.k)

    @property
    def start(self) -> State:
        return tuple(self.p), 0

    def draft(self, state: State) -> Sequence[Number]:
        return tuple(int(x == self.candidates[state[1]]) for x in range(len(self.p)))

    def accept(self, state: State, x: int) -> Number:
        return state[0][x]

    def reject(self, state: State, x: int) -> State:
        return normalise([0 if y == x else v for y, v in enumerate(state[0])]), state[1] + 1

    def residual(self, state: State) -> Sequence[Number]:
        return state[0]


S, PJ = sp.symbols("S p_j", nonnegative=True)
REACH = 1 - S  # probability of reaching step j, S = p(x_1) + ... + p(x_{j-1})
EMIT = REACH * PJ / (1 - S)
NEXT_REACH = REACH * (1 - PJ / (1 - S))


def check_exact_optimal() -> Outcome:
    symbolic_ok = vanishes(EMIT - PJ) and vanishes(NEXT_REACH - (1 - S - PJ))
    cases = instances(seed=501, count=120, V_range=(2, 6), k_range=(1, 6), k_at_most_V=True)
    bad = []
    for inst in cases:
        rule = TopK(inst.p, inst.q, inst.k, Exact())
        em = emit(rule, Exact())
        problems = exactness_problems(em, inst.p)
        bound = sum((inst.p[x] for x in rule.candidates), Fraction(0))
        if em.acceptance != bound:
            problems.append(f"acceptance {em.acceptance} != p(C) = {bound}")
        if any(em.accepted[x] != inst.p[x] for x in rule.candidates):
            problems.append("some candidate's accepted mass is below its target mass")
        bad += [f"{inst}: {m}" for m in problems]
    derivation = f"""
Write `S_j = p(x_1) + ... + p(x_j)` for the candidates in order. Induction on `j`: step `j` is reached
with probability `1 - S_{{j-1}}`, and its target is `p` restricted to the tokens other than
`x_1..x_{{j-1}}`, renormalised by `1 - S_{{j-1}}`. It emits `x_j` with probability
{display_eq(EMIT, PJ)}
and passes on with probability
{display_eq(NEXT_REACH, 1 - S - PJ)}
(`S = S_{{j-1}}`, `p_j = p(x_j)`). So each candidate is emitted with probability exactly `p(x_j)`,
all are rejected with probability `1 - p(C)`, and the residual, `p` on the complement of `C`
renormalised by `1 - p(C)`, emits every other token `y` with probability `p(y)`. A step with
`1 - S_{{j-1}} = 0` is never reached. Acceptance: `p(C)`.

Optimality for the fixed set `C`: any exact verifier accepts only tokens of `C` and emits each token
`y` with total probability `p(y)`, so its acceptance is at most `sum_{{y in C}} p(y) = p(C)`. As an
LP: maximise `sum_{{y in C}} a(y)` subject to `a(y) <= p(y)`; the dual solution (multiplier 1 on each
`a(y) <= p(y)`) certifies the bound `p(C)`, and topk attains it token by token.
"""
    checked = f"""
- Symbolic (SymPy): the inductive step's emission and reach identities;
  {"both hold" if symbolic_ok else "FAILED"}.
- Exact rational law on {len(cases)} seeded instances (`V` in 2..6, `k` in 1..`V`, zeros allowed): the law
  equals `p`, the acceptance equals `p(C)`, and every candidate's accepted mass equals its target mass
  (the LP bound is attained token by token); {tally(bad)}.
"""
    return Outcome(symbolic_ok and not bad, derivation, checked)


THEOREMS = [
    Theorem(
        name="topk.exact_optimal",
        statement=(
            "topk emits exactly p with acceptance p(C) for its candidate set C, and no exact verifier with candidate "
            "set C accepts more."
        ),
        method="symbolic identity (induction) + LP certificate + exact rational arithmetic",
        check=check_exact_optimal,
    )
]
