"""Theorem 3 -- rrs_wor (recursive rejection sampling, candidates without replacement) is exact.

Candidates are drawn by successive sampling: ``q_1 = q``, ``q_{i+1} = norm(q_i with x_i set to 0)``.
Step ``i`` is sps of ``x_i ~ q_i`` against ``r_i``, with ``r_{i+1} = norm((r_i - q_i)+)``.  Given the
rejected tokens, ``x_i`` is exactly ``q_i``-distributed, so the induction of ``rrs`` goes through with
``q_i`` in place of ``q``; a rejected ``x_i`` has ``r_i(x_i) < q_i(x_i)``, so ``r_{i+1}(x_i) = 0`` and
removing it from the draft loses nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from resispec.theory.common.arith import Exact, Number, normalise
from resispec.theory.common.exact import instances
from resispec.theory.common.sequential import audit, emit
from resispec.theory.common.symbolic import latex_block, region_search
from resispec.theory.registry import FORMAL, Outcome, Theorem, tally
from resispec.theory.rejection.sps import accept_probability, next_residual

EXPECTED_REGIONS = 9
LAW_FORMULA = latex_block(
    r"\mathrm{law}(x) = q(x)\min\left(1, \tfrac{p(x)}{q(x)}\right) + \sum_{x_1} q(x_1)"
    r"\left(1 - \min\left(1, \tfrac{p(x_1)}{q(x_1)}\right)\right)"
    r"\left[ q_2(x)\, a_2(x) + \rho_2\, r_3(x) \right] = p(x)"
)
State = tuple[tuple[Number, ...], tuple[Number, ...]]


@dataclass(frozen=True)
class SPSChainWOR:
    """rrs_wor; state: (current residual target ``r_i``, current draft ``q_i``)."""

    p: Sequence[Number]
    q: Sequence[Number]
    k: int
    ar: object

    @property
    def start(self) -> State:
        return tuple(self.p), tuple(self.q)

    def draft(self, state: State) -> Sequence[Number]:
        return state[1]

    def accept(self, state: State, x: int) -> Number:
        r, q = state
        return accept_probability(self.ar, r[x], q[x])

    def reject(self, state: State, x: int) -> State:
        r, q = state
        rest = tuple(0 if y == x else v for y, v in enumerate(q))
        # After the last draftable token is rejected no draft follows, only the residual.
        return next_residual(self.ar, r, q), rest if self.ar.is_zero(sum(rest, 0)) else normalise(rest)

    def residual(self, state: State) -> Sequence[Number]:
        return state[0]


def law_defect(ar, p, q):
    """``law - p`` for rrs_wor with ``k = 2``."""
    return [a - b for a, b in zip(emit(SPSChainWOR(p, q, 2, ar), ar).law, p)]


def check_exact() -> Outcome:
    regions = region_search(law_defect, V=3, samples=1500, seed=302)
    cases = [
        inst
        for inst in instances(seed=303, count=120, V_range=(2, 6), k_range=(1, 4))
        if inst.k <= sum(1 for v in inst.q if v > 0)  # WOR needs k distinct draftable tokens
    ]
    bad = []
    for inst in cases:
        bad += [f"{inst}: {m}" for m in audit(SPSChainWOR(inst.p, inst.q, inst.k, Exact()), inst.p)]
    derivation = f"""
Given the set `S` of candidates rejected so far, the next candidate is drawn from `q_i`, which is `q`
restricted to the complement of `S` and renormalised (successive sampling). Step `i` is sps of this
candidate against `r_i`, so by the inductive step of `rrs.exact` (with `q_i` for `q`) it emits `r_i`
provided every continuation after a rejection emits `r_{{i+1}} = norm((r_i - q_i)+)`. This continuation
depends on the rejected token only through `q_{{i+1}}`, and the hypothesis is that it emits
`r_{{i+1}}` for *every* draft law, so the induction needs no independence of `r_{{i+1}}` from `x_i`.
The step-`i` rejection probability is `sum_x (q_i - r_i)+ = sum_x (r_i - q_i)+`, the normaliser of the
residual, as in sps. Rejecting `x_i` needs `r_i(x_i) < q_i(x_i)`, hence `r_{{i+1}}(x_i) = 0`: the
removed token carries no residual mass.

For `V = 3`, `k = 2`: step 1 labels each token A (`p <= q`) or N (`p > q`), with at least one of
each. Only an A token `x_1` can be rejected; on the other two tokens `r_2` and
`q_2 = q / (1 - q(x_1))` both sum to one, so exactly one of them has `r_2 > q_2`, forced to be the N
token when the other is A. Labellings AAN give one region each (3), ANN two each (6):
{EXPECTED_REGIONS} regions, on each of which the emitted law is a rational function that must equal
`p`:
{LAW_FORMULA}
with `q_2 = norm(q with x_1 set to 0)`, `a_2 = min(1, r_2/q_2)`, `rho_2 = sum (q_2 - r_2)+` and
`r_3 = norm((r_2 - q_2)+)`.
"""
    checked = f"""
- `V = 3`, `k = 2`, symbolic: {regions.samples} seeded points found {regions.regions} regions (expected
  {EXPECTED_REGIONS}); on each, `law - p` cancels to zero with the decisions resolved;
  {tally(regions.failures)}.
- Exact rational law on {len(cases)} seeded instances, `V` in 2..6, `k` in 1..4 (at most the size of the
  draft's support), zeros allowed: the law equals `p` and every acceptance probability, draft law and
  residual is a probability; {tally(bad)}.
"""
    ok = not regions.failures and regions.regions == EXPECTED_REGIONS and not bad
    return Outcome(ok, derivation, checked)


THEOREMS = [
    Theorem(
        name="rrs_wor.exact",
        statement=(
            "rrs_wor (candidates without replacement, each step verified against the masked, renormalised draft q_i) "
            "emits exactly p for every V and k <= |supp q|."
        ),
        method="case analysis by region (V = 3, k = 2) + exact rational arithmetic",
        check=check_exact,
        label=FORMAL,
        formal=("rrs_wor_exact",),
    )
]
