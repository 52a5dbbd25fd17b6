"""Theorem 1 -- sps (single-draft speculative sampling) is exact, with acceptance ``1 - TV(p, q)``.

Rule: draw ``x ~ q``; accept with probability ``min(1, p(x)/q(x))``; else emit from
``norm((p - q)+)``.  Per token the emitted mass is ``min(p, q) + (p - q)+ = p``.  The same step applied
to the current residual is the building block of ``rrs`` (``SPSChain`` with ``k > 1``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import sympy as sp

from resispec.theory.common.arith import Exact, Number, normalise
from resispec.theory.common.exact import instances
from resispec.theory.common.sequential import emit, exactness_problems
from resispec.theory.common.symbolic import by_cases, display_eq
from resispec.theory.registry import FORMAL, Outcome, Theorem, tally

P, Q = sp.symbols("p q", positive=True)
D = sp.Symbol("d", nonnegative=True)
SIGN_CASES = ({P: Q + D}, {Q: P + D})  # p >= q and p <= q


def accept_probability(ar, r_x: Number, q_x: Number) -> Number:
    """``min(1, r(x)/q(x))``: the sps acceptance of candidate ``x`` against target ``r``."""
    return ar.min(1, r_x / q_x)


def next_residual(ar, r: Sequence[Number], q: Sequence[Number]) -> tuple[Number, ...]:
    """``norm((r - q)+)``: the law sps emits after a rejection."""
    return normalise([ar.max(a - b, 0) for a, b in zip(r, q)])


@dataclass(frozen=True)
class SPSChain:
    """sps applied ``k`` times, each time against the current residual (``k = 1``: sps; ``k > 1``:
    rrs with i.i.d. candidates).  State: the current residual target ``r``."""

    p: Sequence[Number]
    q: Sequence[Number]
    k: int
    ar: object

    @property
    def start(self) -> tuple[Number, ...]:
        return tuple(self.p)

    def draft(self, r: tuple[Number, ...]) -> Sequence[Number]:
        return self.q

    def accept(self, r: tuple[Number, ...], x: int) -> Number:
        return accept_probability(self.ar, r[x], self.q[x])

    def reject(self, r: tuple[Number, ...], x: int) -> tuple[Number, ...]:
        return next_residual(self.ar, r, self.q)

    def residual(self, r: tuple[Number, ...]) -> Sequence[Number]:
        return r


# The pointwise identities the derivation rests on, each checked in both sign cases of p - q.
EMITTED = sp.Min(P, Q) + sp.Max(P - Q, 0)
ACCEPTED = Q * sp.Min(1, P / Q)
REJECTED = Q * (1 - sp.Min(1, P / Q))
TV_TERM = (sp.Abs(P - Q) + P - Q) / 2


def check_exact() -> Outcome:
    identities = {
        "emitted mass": (EMITTED, P),
        "accepted mass": (ACCEPTED, sp.Min(P, Q)),
        "rejected mass": (REJECTED, sp.Max(Q - P, 0)),
        "balance of the two parts": (sp.Max(P - Q, 0) - sp.Max(Q - P, 0), P - Q),
        "total variation term": (sp.Max(P - Q, 0), TV_TERM),
    }
    failed = [name for name, (lhs, rhs) in identities.items() if not by_cases(lhs - rhs, SIGN_CASES)]
    cases = instances(seed=101, count=150, V_range=(2, 6), k_range=(1, 1))
    bad = []
    for inst in cases:
        em = emit(SPSChain(inst.p, inst.q, 1, Exact()), Exact())
        expected_acceptance = 1 - sum((abs(a - b) for a, b in zip(inst.p, inst.q)), Fraction(0)) / 2
        problems = exactness_problems(em, inst.p)
        if em.acceptance != expected_acceptance:
            problems.append(f"acceptance {em.acceptance} != 1 - TV = {expected_acceptance}")
        bad += [f"{inst}: {msg}" for msg in problems]
    derivation = f"""
Draw `x ~ q`. Candidate `x` is emitted through acceptance with mass
{display_eq(ACCEPTED, sp.Min(P, Q))}
and rejected with mass `q(x) - min(p, q)(x) = (q - p)+(x)`, so the rejection probability is
`sum_x (q - p)+(x)`. Because `p - q = (p - q)+ - (q - p)+` and both laws sum to one,
`sum_x (q - p)+ = sum_x (p - q)+`: the rejection probability is exactly the normaliser of the residual
`norm((p - q)+)`. The emitted mass of token `x` is therefore
{display_eq(EMITTED, P)}
for every token, whatever `V`: the claim is a per-token identity plus one normalisation. Summing the
accepted mass, the acceptance is `sum_x min(p, q) = 1 - sum_x (p - q)+`, and
{display_eq(sp.Max(P - Q, 0), TV_TERM)}
summed over `x` (where `sum (p - q) = 0`) gives `sum_x (p - q)+ = TV(p, q)`: acceptance `1 - TV`.
Tokens with `q(x) = 0` are never drafted and contribute `min(p, 0) = 0` to the acceptance.

**Optimal.** Any exact verifier of one candidate `x ~ q` accepts `x` with some probability `a(x)` in
`[0, 1]` and otherwise emits from a law that may depend on `x`; it emits `y` with
`q(y) a(y) + sum_x q(x) (1 - a(x)) f_x(y) = p(y)`, so its accepted mass `q(y) a(y)` is at most `q(y)`
and at most `p(y)`: its acceptance is at most `sum_y min(p, q)`, which sps attains (Coq:
`single_draft_optimal`, `sps_optimal`).
"""
    checked = f"""
- Case analysis (SymPy, `p, q > 0`, cases `p = q + d` and `q = p + d` with `d >= 0`): the identities
  {", ".join(identities)}; {"all hold" if not failed else "FAILED: " + ", ".join(failed)}.
- Exact rational law of the rule (candidate and verification randomness integrated out) on
  {len(cases)} seeded instances, `V` in 2..6, zeros allowed in `p` and `q`: the law equals `p` and the
  acceptance equals `1 - TV(p, q)`; {tally(bad)}.
"""
    return Outcome(not failed and not bad, derivation, checked)


THEOREMS = [
    Theorem(
        name="sps.exact",
        statement=(
            "sps emits exactly p for every V: min(p, q) + (p - q)+ = p token by token, and its acceptance is sum_x "
            "min(p, q) = 1 - TV(p, q), the most any exact single-draft verifier accepts."
        ),
        method="case analysis + exact rational arithmetic",
        check=check_exact,
        label=FORMAL,
        formal=("sps_exact", "sps_acceptance_TV", "single_draft_optimal", "sps_optimal"),
    )
]
