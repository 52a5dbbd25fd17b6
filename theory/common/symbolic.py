"""SymPy helpers: identities by case analysis and the region-by-region check of a rule.

``vanishes`` is the one test of a symbolic identity used everywhere: the expression is brought over a
common denominator and cancelled, and must be exactly zero.  ``by_cases`` applies it (or a sign test)
after substituting a parametrisation of each case in terms of non-negative symbols.  ``region_search``
splits the simplex of ``(p, q)`` into the regions where a rule's ``min``/``max`` decisions are constant
(``resispec.theory.common.arith``), finds a witness for each by seeded sampling, and checks an identity symbolically on
every region found.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import sympy as sp

from resispec.theory.common.arith import Exact, Number, Region, Tie
from resispec.theory.common.exact import Law, fmt, random_distribution


def vanishes(expr: Number) -> bool:
    """``expr`` is identically zero as a rational function."""
    return sp.cancel(sp.together(sp.sympify(expr))) == 0


def nonnegative(expr: Number) -> bool:
    """SymPy can prove ``expr >= 0`` from the sign assumptions of its symbols."""
    return bool(sp.factor(sp.sympify(expr)).is_nonnegative)


def settle(expr: Number) -> sp.Expr:
    """Replace every ``Min``, ``Max`` and ``Abs`` whose outcome the sign assumptions of the symbols
    decide (the difference of two arguments factors into a manifestly signed expression)."""
    expr = sp.sympify(expr)
    if not expr.args:
        return expr
    args = [settle(a) for a in expr.args]
    if isinstance(expr, (sp.Min, sp.Max)):
        for a in args:
            diffs = [sp.factor(sp.together(b - a)) for b in args]
            if all(d.is_nonnegative if isinstance(expr, sp.Min) else d.is_nonpositive for d in diffs):
                return a
        raise ValueError(f"the case does not decide {expr}")
    if isinstance(expr, sp.Abs):
        inner = sp.factor(sp.together(args[0]))
        if inner.is_nonnegative:
            return args[0]
        if inner.is_nonpositive:
            return -args[0]
        raise ValueError(f"the case does not decide {expr}")
    return expr.func(*args)


def by_cases(
    expr: Number, cases: Sequence[Mapping[sp.Symbol, Number]], test: Callable[[Number], bool] = vanishes
) -> bool:
    """``test`` holds for ``expr`` in every case; each case is a substitution by non-negative symbols
    that decides every ``Min``/``Max``/``Abs`` in ``expr`` (see ``settle``)."""
    return all(test(settle(sp.sympify(expr).subs(case))) for case in cases)


def simplex_point(name: str, V: int) -> tuple[sp.Expr, ...]:
    """A generic point of the open simplex: positive symbols ``name0..`` and ``1 - sum`` last."""
    free = sp.symbols(f"{name}0:{V - 1}", positive=True)
    return (*free, 1 - sum(free))


Defect = Callable[[object, Sequence[Number], Sequence[Number]], Sequence[Number]]


@dataclass
class RegionReport:
    """What ``region_search`` found: one witness ``(p, q)`` per region and the regions that failed."""

    witnesses: dict[tuple[int, ...], tuple[Law, Law]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    samples: int = 0

    @property
    def regions(self) -> int:
        return len(self.witnesses)


def region_search(defect: Defect, V: int, samples: int, seed: int) -> RegionReport:
    """Check ``defect(ar, p, q) == 0`` symbolically on every region hit by ``samples`` random points.

    ``defect`` evaluates the rule with backend ``ar`` and returns the quantities that must vanish.
    """
    rng = random.Random(seed)
    p_sym, q_sym = simplex_point("p", V), simplex_point("q", V)
    free = [*p_sym[:-1], *q_sym[:-1]]
    report = RegionReport(samples=samples)
    for _ in range(samples):
        p, q = random_distribution(rng, V, grain=60), random_distribution(rng, V, grain=60)
        exact = Exact()
        defect(exact, p, q)
        signature = tuple(exact.picks)
        if signature in report.witnesses:
            continue
        region = Region(dict(zip(free, [*p[:-1], *q[:-1]])))
        try:
            exprs = defect(region, p_sym, q_sym)
        except Tie:
            continue
        if tuple(region.picks) != signature:
            report.failures.append(f"backends disagree at p={fmt(p)}, q={fmt(q)}")
        elif not all(vanishes(e) for e in exprs):
            report.failures.append(f"identity fails on the region of p={fmt(p)}, q={fmt(q)}")
        report.witnesses[signature] = (p, q)
    return report


def latex_block(expr: Number | str) -> str:
    """A display formula for the generated docs."""
    body = expr if isinstance(expr, str) else sp.latex(expr)
    return f"$$\n{body}\n$$"


def display_eq(lhs: Number, rhs: Number) -> str:
    """A display equation ``lhs = rhs`` (unevaluated, so an identity is shown, not ``True``)."""
    return latex_block(sp.Eq(sp.sympify(lhs), sp.sympify(rhs), evaluate=False))

