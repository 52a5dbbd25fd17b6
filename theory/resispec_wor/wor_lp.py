"""The sequential LP of two WOR candidates in exact rationals, and the optimal-stopping dual
certificate of the latest-first plan.

Nodes over the draft's support ``D``: ``x`` (first candidate) and ``(x, y)`` (x rejected, second
candidate ``y != x``), drafted with ``P(x) = q_x`` and ``P(x y) = q_x q_y / (1 - q_x)``. Primal
(``resispec.bounds_wor``, k = 2): accepted masses ``m(x), m(x, y) >= 0`` with

    m(x) <= q_x                                  (nu_x),
    m(x, y) + m(x) q_y / (1 - q_x) <= P(x y)     (mu_xy; the reach of node (x, y)),
    m(y) + sum_{x != y} m(x, y) <= p_y           (lambda_y; what an exact verifier may emit at y),

maximise ``sum m``. Dual: minimise ``sum q_x nu_x + sum P(x y) mu_xy + sum p_y lambda_y`` over
non-negative multipliers with, per column,

    m(x):    lambda_x + nu_x + sum_{y != x} mu_xy q_y / (1 - q_x) >= 1,
    m(x, y): lambda_y + mu_xy >= 1.

Certificate of a latest-first plan (``certificate``): classes ``R = {A = q, f > 0}`` (the residual keeps
mass), ``Z = {A = 0, r < C}`` (step 2's capacity is slack), ``I`` = the rest of ``D`` (interior and
boundary tokens); ``mu_y = 1, 0, M`` on R, Z, I with ``M = q(R) / (1 - q(I))`` (0 when ``q(I) = 1``),
``mu_xy = mu_y``, ``lambda = 1 - mu`` and ``nu_x = (1 - M) / (1 - q_x)`` on R, 0 elsewhere.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from fractions import Fraction

from resispec.theory.common.exact import Law
from resispec.theory.common.sequential import SequentialRule
from resispec.theory.resispec_wor.wor_shaping import Plan

ZERO = Fraction(0)
Node = tuple[int, ...]  # (x,) or (x, y)


def support(q: Law) -> list[int]:
    return [x for x, v in enumerate(q) if v > 0]


def nodes(q: Law) -> list[Node]:
    """Every node of the two-candidate draft tree, parents first."""
    D = support(q)
    return [(x,) for x in D] + [(x, y) for x in D for y in D if y != x]


def drafted(q: Law, node: Node) -> Fraction:
    """``P(node)``: the probability that the first draws are ``node``."""
    x = node[0]
    return q[x] if len(node) == 1 else q[x] * q[node[1]] / (1 - q[x])


def rule_masses(rule: SequentialRule) -> dict[Node, Fraction]:
    """The accepted mass of every node under a two-candidate sequential ``rule`` (``resispec.theory.common.sequential``
    protocol): ``m(x) = q_x a_1(x)``, ``m(x, y) = q_x (1 - a_1(x)) q'(y) a_2(y)`` in the state after
    rejecting x (``q'`` its draft)."""
    masses: dict[Node, Fraction] = {}
    draft = rule.draft(rule.start)
    for x in support(draft):
        a = rule.accept(rule.start, x)
        masses[(x,)] = draft[x] * a
        if a == 1:
            continue
        state: Hashable = rule.reject(rule.start, x)
        second = rule.draft(state)
        for y in support(second):
            masses[(x, y)] = draft[x] * (1 - a) * second[y] * rule.accept(state, y)
    return masses


def primal_problems(p: Law, q: Law, masses: dict[Node, Fraction]) -> list[str]:
    """Why ``masses`` is not a feasible point of the LP (empty when it is)."""
    problems = [f"node {n} is not in the draft tree" for n in masses if n not in set(nodes(q))]
    m = {n: masses.get(n, ZERO) for n in nodes(q)}
    problems += [f"m{n} = {v} < 0" for n, v in m.items() if v < 0]
    for n, v in m.items():
        used = v if len(n) == 1 else v + m[n[:1]] * q[n[1]] / (1 - q[n[0]])
        if used > drafted(q, n):
            problems.append(f"node {n}: accepted plus accepted above = {used} > P = {drafted(q, n)}")
    for y in range(len(p)):
        emitted = sum((v for n, v in m.items() if n[-1] == y), ZERO)
        if emitted > p[y]:
            problems.append(f"token {y}: accepted {emitted} > p = {p[y]}")
    return problems


@dataclass(frozen=True)
class Dual:
    """Multipliers: ``lam[y]`` (budget rows, by token id), ``mu[(x, y)]`` and ``nu[x]`` (node rows)."""

    lam: Law
    mu: dict[Node, Fraction]
    nu: dict[int, Fraction]

    def objective(self, p: Law, q: Law) -> Fraction:
        nodes_ = sum((v * drafted(q, n) for n, v in self.mu.items()), ZERO)
        return nodes_ + sum((v * q[x] for x, v in self.nu.items()), ZERO) + sum(
            (a * b for a, b in zip(p, self.lam)), ZERO)


def column_values(q: Law, dual: Dual) -> dict[Node, Fraction]:
    """``(A^T y)`` per column: ``lambda_x + nu_x + sum_y mu_xy q_y / (1 - q_x)`` and ``lambda_y + mu_xy``."""
    out = {}
    for n in nodes(q):
        x = n[0]
        if len(n) == 2:
            out[n] = dual.lam[n[1]] + dual.mu.get(n, ZERO)
        else:
            continuation = sum((dual.mu.get((x, y), ZERO) * q[y] for y in support(q) if y != x), ZERO)
            out[n] = dual.lam[x] + dual.nu.get(x, ZERO) + continuation / (1 - q[x])
    return out


def dual_problems(q: Law, dual: Dual) -> list[str]:
    """Why ``dual`` is not dual feasible (empty when it is)."""
    values = [*dual.lam, *dual.mu.values(), *dual.nu.values()]
    problems = [f"negative multiplier {v}" for v in values if v < 0]
    problems += [f"column {n}: {v} < 1" for n, v in column_values(q, dual).items() if v < 1]
    return problems


def classes(plan: Plan) -> tuple[list[int], list[int], list[int]]:
    """``(R, Z, I)`` over the draft's support (module docstring)."""
    R, Z, I = [], [], []
    for x in support(plan.q):
        if plan.accepted[x] == plan.q[x] and plan.residual[x] > 0:
            R.append(x)
        elif plan.accepted[x] == 0 and plan.r[x] < plan.reach[x]:
            Z.append(x)
        else:
            I.append(x)
    return R, Z, I


def certificate(plan: Plan) -> Dual:
    """The optimal-stopping dual of a latest-first plan (module docstring)."""
    q = plan.q
    R, Z, I = classes(plan)
    free = 1 - sum((q[x] for x in I), ZERO)
    M = sum((q[x] for x in R), ZERO) / free if free else ZERO
    mu_token = {x: Fraction(1) for x in R} | {x: ZERO for x in Z} | {x: M for x in I}
    lam = tuple(1 - mu_token[y] if y in mu_token else ZERO for y in range(len(q)))
    mu = {n: mu_token[n[1]] for n in nodes(q) if len(n) == 2}
    nu = {x: (1 - M) / (1 - q[x]) if x in R else ZERO for x in support(q)}
    return Dual(lam, mu, nu)


def certificate_problems(p: Law, q: Law, masses: dict[Node, Fraction], dual: Dual) -> list[str]:
    """Why ``masses`` is not certified optimal by ``dual``: primal and dual feasibility and equal
    objectives (then both are optimal by weak duality)."""
    problems = primal_problems(p, q, masses) + dual_problems(q, dual)
    primal, bound = sum(masses.values(), ZERO), dual.objective(p, q)
    if primal != bound:
        problems.append(f"primal {primal} != dual {bound}")
    return problems
