"""Theorem 2 -- rrs (recursive rejection sampling, i.i.d. candidates) is exact for every ``k``.

``r_1 = p``; step ``i`` is sps of candidate ``x_i ~ q`` against ``r_i``; on rejection
``r_{i+1} = norm((r_i - q)+)``; after ``k`` rejections emit from ``r_{k+1}``.  Induction from the last
step: if whatever follows a rejection at step ``i`` emits ``r_{i+1}``, step ``i`` emits ``r_i`` (the sps
identity with ``p := r_i``), because ``x_i`` is drawn afresh from ``q``, independently of the earlier
candidates and of the verification randomness that rejected them.
"""

from __future__ import annotations

import sympy as sp

from resispec.theory.common.arith import Exact
from resispec.theory.common.exact import instances
from resispec.theory.common.sequential import audit, emit
from resispec.theory.common.symbolic import by_cases, display_eq, region_search
from resispec.theory.registry import FORMAL, Outcome, Theorem, tally
from resispec.theory.rejection.sps import SPSChain

R, Q, RHO = sp.symbols("r q rho", positive=True)
D = sp.Symbol("d", nonnegative=True)
# Inductive step for one token: accepted mass plus the rejection probability times the next residual.
STEP_LAW = Q * sp.Min(1, R / Q) + sp.Mul(RHO, sp.Max(R - Q, 0) / RHO, evaluate=False)
EXPECTED_REGIONS = 12


def law_defect(ar, p, q):
    """``law - p`` for rrs with ``k = 2`` (the quantities that must vanish)."""
    return [a - b for a, b in zip(emit(SPSChain(p, q, 2, ar), ar).law, p)]


def check_exact() -> Outcome:
    step_ok = by_cases(STEP_LAW - R, ({R: Q + D}, {Q: R + D}))
    regions = region_search(law_defect, V=3, samples=1500, seed=202)
    cases = instances(seed=203, count=120, V_range=(2, 6), k_range=(1, 4))
    bad = []
    for inst in cases:
        bad += [f"{inst}: {m}" for m in audit(SPSChain(inst.p, inst.q, inst.k, Exact()), inst.p)]
    regions_ok = not regions.failures and regions.regions == EXPECTED_REGIONS
    derivation = f"""
Let `L_i` be the law emitted from step `i` on, given that step `i` is reached with residual target
`r_i` (`L_{{k+1}} = r_{{k+1}}`, the final residual). Step `i` draws `x_i ~ q` independently of
everything before it (i.i.d. drafting), so given that the step is reached the candidate is still
`q`-distributed, and the rejection probability is `rho_i = sum_x (q - r_i)+ = sum_x (r_i - q)+` (Theorem
`sps.exact`). If `L_{{i+1}} = r_{{i+1}} = (r_i - q)+ / rho_i` (inductive hypothesis), the mass step `i`
sends to token `x` is
{display_eq(STEP_LAW, R)}
(with `r = r_i(x)`, `q = q(x)`, `rho = rho_i`), so `L_i = r_i`, and `L_1 = r_1 = p`. When `rho_i = 0`
the step cannot reject and `r_{{i+1}}` is never used.

For `V = 3`, `k = 2` the rule's two `min(1, r/q)` decisions and `(r - q)+` parts split the simplex of
`(p, q)` into regions labelled, per token, A: `p <= q`; B: `q < p <= (1 + rho_1) q`
(`r_2 <= q`); C: `p > (1 + rho_1) q` (`r_2 > q`). A feasible labelling needs an A (else `p > q`
everywhere, impossible as both sum to one) and a C (else `r_2 <= q` on B, summing to
`1 <= q(B) < 1`); the search below finds a witness for every such labelling, giving
`3^3 - 2^3 - 2^3 + 1 = {EXPECTED_REGIONS}` regions. On each, the emitted law is a rational function of
`(p_0, p_1, q_0, q_1)` (`p_2 = 1 - p_0 - p_1`, `q_2 = 1 - q_0 - q_1`) and `law - p` must cancel to zero.
"""
    checked = f"""
- Inductive step, by cases `r = q + d` and `q = r + d`: {"holds" if step_ok else "FAILS"}.
- `V = 3`, `k = 2`, symbolic: {regions.samples} seeded points found {regions.regions} regions of the rule's
  `min`/`max` decisions (expected {EXPECTED_REGIONS}); on each, `law - p` cancels to zero symbolically
  with the decisions resolved; {tally(regions.failures)}.
- Exact rational law on {len(cases)} seeded instances, `V` in 2..6, `k` in 1..4, zeros allowed: the law
  equals `p` and every acceptance probability and residual is a probability; {tally(bad)}.
"""
    return Outcome(step_ok and regions_ok and not bad, derivation, checked)


THEOREMS = [
    Theorem(
        name="rrs.exact",
        statement=(
            "rrs with k i.i.d. candidates emits exactly p for every V and k: each step is sps against the current "
            "residual, and candidates are independent of earlier rejections."
        ),
        method=(
            "symbolic identity (inductive step) + case analysis by region (V = 3, k = 2) + exact rational arithmetic"
        ),
        check=check_exact,
        label=FORMAL,
        formal=("rrs_exact",),
    )
]
