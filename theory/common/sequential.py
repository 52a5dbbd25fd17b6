"""Sequential verifiers and their exact output law.

A sequential verifier looks at candidates one at a time: in state ``s`` the next candidate is drawn from
``draft(s)``; it is accepted with probability ``accept(s, x)``; on rejection the state becomes
``reject(s, x)``; after ``k`` rejections a token is drawn from ``residual(s)``.  The state carries
whatever the rule remembers (current residual target, the draft left after removals, the step index).
Candidates are drawn afresh from ``draft(s)`` at each step, so a step's candidate is independent of
the verification randomness of earlier steps given the state -- exactly the drafting schemes of
``verifiers.md`` (i.i.d.: ``draft`` is always ``q``; WOR: ``draft`` is ``q`` with the rejected
tokens removed; deterministic top-k: a point mass).

``emit`` integrates out candidates and verification randomness exactly (by recursion over states with
memoisation), giving per-step accepted masses, the residual emission and the reach probabilities.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol

from resispec.theory.common.arith import Exact, Number


class SequentialRule(Protocol):
    """The four callbacks of a sequential verifier with ``k`` candidates (see the module docstring)."""

    k: int
    start: Hashable

    def draft(self, state: Hashable) -> Sequence[Number]: ...

    def accept(self, state: Hashable, x: int) -> Number: ...

    def reject(self, state: Hashable, x: int) -> Hashable: ...

    def residual(self, state: Hashable) -> Sequence[Number]: ...


@dataclass(frozen=True)
class Emission:
    """The exact law of one verification, split by how each token was emitted.

    ``steps[j][x]``: probability that step ``j + 1`` accepts a candidate equal to ``x``;
    ``residual[x]``: probability that all candidates are rejected and the residual emits ``x``;
    ``reach[j]``: probability that step ``j + 1`` is reached (``reach[k]``: all ``k`` rejected);
    ``violations``: rule outputs that are not probabilities (exact backend only).
    """

    steps: tuple[tuple[Number, ...], ...]
    residual: tuple[Number, ...]
    reach: tuple[Number, ...]
    violations: tuple[str, ...]

    @property
    def accepted(self) -> tuple[Number, ...]:
        return tuple(sum(col, 0) for col in zip(*self.steps))

    @property
    def law(self) -> tuple[Number, ...]:
        return tuple(a + r for a, r in zip(self.accepted, self.residual))

    @property
    def acceptance(self) -> Number:
        return sum(self.accepted, 0)


def _check_distribution(ar, v: Sequence[Number], what: str, out: list[str]) -> None:
    if ar.validate and (any(x < 0 for x in v) or sum(v, 0) != 1):
        out.append(f"{what} is not a distribution: {tuple(str(x) for x in v)}")


def emit(rule: SequentialRule, ar) -> Emission:
    """The exact emission of ``rule`` computed with backend ``ar`` (``resispec.theory.common.arith``)."""
    k = rule.k
    violations: list[str] = []
    memo: dict[tuple[Hashable, int], tuple[list[list[Number]], list[Number], list[Number]]] = {}

    def from_state(state: Hashable, left: int) -> tuple[list[list[Number]], list[Number], list[Number]]:
        """(steps, residual, reach) conditional on being in ``state`` with ``left`` candidates to come."""
        key = (state, left)
        if key in memo:
            return memo[key]
        step = k - left + 1
        if left == 0:
            res = list(rule.residual(state))
            _check_distribution(ar, res, f"residual after {k} rejections", violations)
            memo[key] = ([], res, [1])
            return memo[key]
        draft = list(rule.draft(state))
        _check_distribution(ar, draft, f"draft law of step {step}", violations)
        V = len(draft)
        here = [0] * V
        later: list[list[Number]] = [[0] * V for _ in range(left - 1)]
        residual: list[Number] = [0] * V
        reach: list[Number] = [1] + [0] * left
        for x in range(V):
            if ar.is_zero(draft[x]):
                continue
            a = rule.accept(state, x)
            if ar.validate and not 0 <= a <= 1:
                violations.append(f"step {step}: acceptance {a} of token {x} is outside [0, 1]")
            here[x] += draft[x] * a
            w = draft[x] * (1 - a)
            if ar.is_zero(w):
                continue
            sub_steps, sub_res, sub_reach = from_state(rule.reject(state, x), left - 1)
            for row, sub_row in zip(later, sub_steps):
                for y in range(V):
                    row[y] += w * sub_row[y]
            for y in range(V):
                residual[y] += w * sub_res[y]
            for i, r in enumerate(sub_reach):
                reach[i + 1] += w * r
        memo[key] = ([here] + later, residual, reach)
        return memo[key]

    steps, residual, reach = from_state(rule.start, k)
    return Emission(tuple(map(tuple, steps)), tuple(residual), tuple(reach), tuple(violations))


def exactness_problems(em: Emission, p: Sequence[Number]) -> list[str]:
    """Why ``em`` is not an exact verification of target ``p`` (empty when it is)."""
    problems = list(em.violations)
    law = em.law
    if any(a != b for a, b in zip(law, p)):
        problems.append(f"output law {tuple(str(v) for v in law)} != p {tuple(str(v) for v in p)}")
    return problems


def audit(rule: SequentialRule, p: Sequence[Number]) -> list[str]:
    """The exact-law audit of a rule built on the ``Exact`` backend: why it is not exact for ``p``."""
    return exactness_problems(emit(rule, Exact()), p)
