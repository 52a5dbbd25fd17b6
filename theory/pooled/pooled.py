"""pooled (docs/pooled.md) is exact and reaches the i.i.d. optimum alpha*.

pooled selects one of k i.i.d. candidates by a priority score whose selected token has law ``t``, then
verifies it by sps against ``t``. The proof has six steps, one theorem each: the cut bound (from
``resispec.theory.bounds.iid_optimum``), the canonical architecture, the three conditions of an optimal selection
law and the closed-form ``t`` meeting them, ``t`` being a selection law (prefix domination, pools
that fit), the pools keeping the scores Uniform(0, 1), and an instance-by-instance certificate.
Every exact check runs on the rational plan of ``resispec.theory.pooled.pooling``, built without the float code.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction
from functools import cache

import sympy as sp

from resispec.theory.bounds.iid_optimum import CUT_FORMULA, alpha_star_subsets, cut_value, tuple_laws
from resispec.theory.common.arith import Exact, normalise
from resispec.theory.common.exact import Instance, Law, from_weights, instances, pos, random_distribution
from resispec.theory.common.sequential import emit, exactness_problems
from resispec.theory.common.symbolic import by_cases, display_eq, latex_block, nonnegative, vanishes
from resispec.theory.pooled.pooling import ExactPlan, PooledLaw, build, interval_law, pooled_law, prefix_sums
from resispec.theory.registry import Outcome, Theorem, tally
from resispec.theory.rejection.sps import ACCEPTED, EMITTED, REJECTED, P, Q, SPSChain

ZERO = Fraction(0)


CORNERS: dict[str, tuple[Law, Law]] = {
    "p == q": (from_weights(5, 3, 2), from_weights(5, 3, 2)),
    "one-hot p": (from_weights(0, 1, 0, 0), from_weights(4, 1, 3, 2)),
    "one-hot q": (from_weights(2, 3, 5), from_weights(0, 0, 1)),
    "disjoint supports": (from_weights(6, 4, 0, 0), from_weights(0, 0, 7, 3)),
    "ratio ties": (from_weights(2, 4, 6, 8), from_weights(4, 8, 3, 5)),
    "tied groups": (from_weights(1, 1, 2, 2, 4), from_weights(2, 2, 1, 1, 4)),
    "zeros in both": (from_weights(0, 1, 0, 1, 0), from_weights(3, 0, 0, 3, 4)),
    "two optimal cuts": (from_weights(0, 1, 2), from_weights(1, 1, 1)),  # k = 2: Q_1^2 - P_1 = Q_2^2 - P_2 = 1/9
}


@cache
def enumeration_cases() -> tuple[tuple[str, Instance], ...]:
    """Every corner at k = 1, 2, 3 and 40 seeded instances (V 3..5, k 1..3, half with zeros)."""
    corners = [(name, Instance(p, q, k)) for name, (p, q) in CORNERS.items() for k in (1, 2, 3)]
    generic = instances(seed=901, count=20, V_range=(3, 5), k_range=(1, 3), zeros=False)
    sparse = instances(seed=902, count=20, V_range=(3, 5), k_range=(1, 3), zeros=True)
    return tuple(corners + [("random", i) for i in generic] + [("random, zeros", i) for i in sparse])


@cache
def plan_cases() -> tuple[Instance, ...]:
    """Larger instances for the checks that need no enumeration: every corner at k = 1..5 and 200
    seeded instances (V 2..10, k 1..6, half with zeros)."""
    corners = [Instance(p, q, k) for p, q in CORNERS.values() for k in range(1, 6)]
    generic = instances(seed=903, count=100, V_range=(2, 10), k_range=(1, 6), zeros=False)
    sparse = instances(seed=904, count=100, V_range=(2, 10), k_range=(1, 6), zeros=True)
    return tuple(corners + generic + sparse)


@cache
def plan_of(inst: Instance) -> ExactPlan:
    return build(inst.p, inst.q, inst.k)


@cache
def law_of(inst: Instance) -> PooledLaw:
    return pooled_law(plan_of(inst))


def _sum(values) -> Fraction:
    return sum(values, ZERO)


def _gains(plan: ExactPlan) -> list[Fraction]:
    """``Q_i^k - P_i`` for the ratio prefixes ``i = 0..V``."""
    P = prefix_sums([plan.p[x] for x in plan.order])
    Q = prefix_sums([plan.q[x] for x in plan.order])
    return [Q[i] ** plan.k - P[i] for i in range(plan.V + 1)]


# --- (a) the cut bound ----------------------------------------------------------------------------


def cut_problems(plan: ExactPlan) -> list[str]:
    """Why the plan's cut is not the optimal ratio prefix: ``alpha*`` must be the least cut value over
    all ``2^V`` token sets, attained by ``H*``, the first maximiser of ``Q_i^k - P_i``, whose tokens
    all have ``q > 0``."""
    p, q, k = plan.p, plan.q, plan.k
    problems = []
    best = alpha_star_subsets(p, q, k)
    if plan.alpha != best or cut_value(p, q, k, plan.inside) != best:
        problems.append(f"alpha = {plan.alpha}, cut value of H* = {cut_value(p, q, k, plan.inside)}, "
                        f"least cut over all sets = {best}")
    gains = _gains(plan)
    if gains.index(max(gains)) != plan.cut:
        problems.append(f"i* = {plan.cut} is not the first maximiser of Q_i^k - P_i")
    if any(q[x] == 0 for x in plan.inside):
        problems.append("H* holds a token with q = 0")
    return problems


def tight_cut_problems(plan: ExactPlan, law: PooledLaw) -> list[str]:
    """The cut bound instantiated on pooled's exact law, for every set H: accepted-and-emitted mass in
    H at most ``p(H)``, outside H at most ``1 - q(H)^k`` (the probability that some candidate is
    outside H); both equalities at ``H*`` (pooled is a flow saturating the cut ``H*``)."""
    p, q, k, V = plan.p, plan.q, plan.k, plan.V
    problems = []
    for H in (frozenset(c) for r in range(V + 1) for c in itertools.combinations(range(V), r)):
        inside = _sum(law.accepted[y] for y in H)
        outside = law.acceptance - inside
        some_outside = 1 - _sum(q[x] for x in H) ** k
        if inside > _sum(p[y] for y in H) or outside > some_outside:
            problems.append(f"H = {sorted(H)}: accepted {inside} in H, {outside} outside")
        if H == plan.inside and (inside != _sum(p[y] for y in H) or outside != some_outside):
            problems.append("the cut H* is not saturated")
    return problems


def check_cut_bound() -> Outcome:
    plan_bad = [f"{inst}: {m}" for inst in plan_cases() for m in cut_problems(plan_of(inst))]
    flow_bad = [f"{inst}: {m}" for _, inst in enumeration_cases()
                for m in tight_cut_problems(plan_of(inst), law_of(inst))]
    derivation = f"""
Fix any token set `H` and any exact verifier of `k` i.i.d. candidates. An accepted candidate in `H`
is an emitted token in `H`, which has probability `p(H)` (exactness); an accepted candidate outside
`H` needs some candidate outside `H`, which has probability `1 - q(H)^k` (the candidates are
independent). So
{CUT_FORMULA}
for every `H` (Theorem `iid_optimum.min_cut`, which also shows that the least bound `alpha*` is the
LP optimum). By Theorem `iid_optimum.prefixes` the least bound is attained at a prefix of the ratio
order: `alpha* = 1 + P_(i*) - m^k` with `i*` a maximiser of `Q_i^k - P_i` and `m = Q_(i*)`. pooled
takes the first maximiser (`i = 0` included, so `Q_(i*)^k - P_(i*) >= 0`); it never ends on a token with
`q = 0` (such a token raises `P` without raising `Q`, or leaves both equal), and those tokens rank
last (ratio infinity), so every token of `H*` has `q > 0`. The bound is attained when the verifier
saturates the cut `H*`: it emits all of `p(H*)` through acceptances, and accepts whenever some candidate lies outside
`H*`
(`pooled.certificate` shows pooled does both).
"""
    checked = f"""
- Exact rationals, the plans of {len(plan_cases())} instances: the {len(CORNERS)} corner pairs of
  `pooled.certificate` at `k = 1..5` and 200 seeded pairs (`V` 2..10, `k` 1..6, half with zeros): the plan's
  `alpha*` equals the least cut value over all `2^V` token sets (computed by
  `iid_optimum.alpha_star_subsets`, independently of the ratio order) and the cut value of `H*`;
  `i*` is the first maximiser of `Q_i^k - P_i`; no token of `H*` has `q = 0`; {tally(plan_bad)}.
- Exact rationals, pooled's law on the {len(enumeration_cases())} instances of `pooled.certificate`,
  for each of the `2^V` sets `H`: the accepted mass in `H` is at most `p(H)` and outside `H` at most
  `1 - q(H)^k`, with both equalities at `H*`; {tally(flow_bad)}.
"""
    return Outcome(not plan_bad and not flow_bad, derivation, checked)


# --- (b) the canonical architecture ---------------------------------------------------------------

T = sp.Symbol("t", positive=True)
D = sp.Symbol("d", nonnegative=True)
T_CASES = ({P: T + D}, {T: P + D})  # p >= t and p <= t


def canonical_law(p: Law, selected: Law, t: Law) -> tuple[Law, Fraction]:
    """``(law, acceptance)`` of selecting a token with law ``selected`` and verifying it by sps against
    ``t``: accept y w.p. ``min(1, p(y)/t(y))``, else emit from ``norm((p - t)+)``."""
    accepted = [s * (a / b if b > a else 1) for a, s, b in zip(p, selected, t)]
    residual = [pos(a - b) for a, b in zip(p, t)]
    rejected, mass = 1 - _sum(accepted), _sum(residual)
    law = [a + (rejected * r / mass if mass else 0) for a, r in zip(accepted, residual)]
    return tuple(law), _sum(accepted)


def check_canonical() -> Outcome:
    as_t = {name: expr.subs(Q, T) for name, expr in (("emitted", EMITTED), ("accepted", ACCEPTED),
                                                    ("rejected", REJECTED))}
    targets = {"emitted": P, "accepted": sp.Min(P, T), "rejected": sp.Max(T - P, 0)}
    failed = [name for name, expr in as_t.items() if not by_cases(expr - targets[name], T_CASES)]
    balance = by_cases(sp.Max(P - T, 0) - sp.Max(T - P, 0) - (P - T), T_CASES)
    rng = random.Random(905)
    bad, runs, wrong_law_exact = [], 0, 0
    for inst in plan_cases():
        plan = plan_of(inst)
        laws = [plan.t, plan.f] + [random_distribution(rng, inst.V, zeros=True) for _ in range(2)]
        for t in laws:
            runs += 1
            em = emit(SPSChain(inst.p, t, 1, Exact()), Exact())
            problems = exactness_problems(em, inst.p)
            if em.acceptance != _sum(min(a, b) for a, b in zip(inst.p, t)):
                problems.append(f"acceptance {em.acceptance} != sum min(p, t)")
            if (em.law, em.acceptance) != canonical_law(inst.p, t, t):
                problems.append("the canonical architecture's law differs from sps against t")
            bad += [f"{inst}, t = {t}: {m}" for m in problems]
        if plan.f != plan.t:
            wrong_law_exact += canonical_law(inst.p, plan.f, plan.t)[0] == inst.p
    symbolic_ok = not failed and balance
    derivation = f"""
Let the selection rule's selected token have law `t` (averaged over the candidates and the rule's
randomness). The verification only looks at the selected token `y`: accept with probability
`min(1, p(y)/t(y))`, else emit from `norm((p - t)+)`. Averaged over everything, this is sps with
draft `t` (Theorem `sps.exact` with `q` replaced by `t`): token `y` is accepted with mass
{display_eq(as_t["accepted"], sp.Min(P, T))}
and rejected with mass `(t - p)+(y)`; since `sum t = sum p = 1` and `p - t = (p - t)+ - (t - p)+`, the
rejection probability `sum (t - p)+` equals the normaliser `sum (p - t)+` of the residual, so the
emitted mass of every token is
{display_eq(as_t["emitted"], P)}
The acceptance (a candidate is emitted) is `sum_y min(p(y), t(y))`. Nothing else about the rule
matters: it may depend on all `k` candidates and its own randomness, as long as `t` is the true
law of the token it selects. (Verifying against a `t` that is not the true law is not exact in
general: see below.)
"""
    symbolic_verdict = "all hold" if symbolic_ok else "FAILED: " + ", ".join(failed or ["balance"])
    checked = f"""
- Case analysis (SymPy, `p, t > 0`, cases `p = t + d`, `t = p + d`): the accepted, rejected and
  emitted masses and the balance `(p - t)+ - (t - p)+ = p - t`: {symbolic_verdict}.
- Exact rationals on the {len(plan_cases())} instances of `pooled.cut_bound`, with `t` = pooled's
  target law, the max-ratio law `f`, and two random laws with zeros ({runs} runs): the exact law of
  sps with draft `t` (`resispec.theory.common.sequential.emit`) equals `p`, its acceptance is `sum min(p, t)`, and
  the closed form of the canonical architecture gives the same law and acceptance; {tally(bad)}.
- Verifying against pooled's `t` while selecting by the max-ratio rule (true law `f != t`) emits
  exactly `p` on {wrong_law_exact} of the {sum(plan_of(i).f != plan_of(i).t for i in plan_cases())}
  instances where `f != t`.
"""
    return Outcome(symbolic_ok and not bad, derivation, checked)


# --- (c) three conditions -------------------------------------------------------------------------


SLACK_FORMULA = latex_block(
    r"\sum_y \min(p, s) = \alpha^* - \left[s(H^*) - m^k\right] - \sum_{H^*} (p - s)^+"
    r" - \sum_{\overline{H^*}} (s - p)^+"
)


def slack_terms(plan: ExactPlan, s: Law) -> tuple[Fraction, Fraction, Fraction]:
    """``(s(H*) - m^k, sum_{H*} (p - s)+, sum_{off H*} (s - p)+)``: what a selection law ``s`` loses
    against ``alpha*`` (conditions (iii), (i), (ii))."""
    inside = plan.inside
    return (
        _sum(s[x] for x in inside) - plan.m ** plan.k,
        _sum(pos(plan.p[x] - s[x]) for x in inside),
        _sum(pos(s[x] - plan.p[x]) for x in range(plan.V) if x not in inside),
    )


def bound_problems(plan: ExactPlan, s: Law) -> list[str]:
    """For a selection law ``s`` of k i.i.d. candidates: ``s(H*) >= m^k`` and the identity
    ``sum min(p, s) = alpha* - [s(H*) - m^k] - sum_{H*} (p - s)+ - sum_{off H*} (s - p)+``."""
    excess, short, over = slack_terms(plan, s)
    problems = []
    if excess < 0:
        problems.append(f"s(H*) = {excess + plan.m ** plan.k} < m^k")
    if _sum(min(a, b) for a, b in zip(plan.p, s)) != plan.alpha - excess - short - over:
        problems.append("sum min(p, s) misses the slack identity")
    return problems


def condition_problems(plan: ExactPlan) -> list[str]:
    """Why the plan's ``t`` is not an optimal selection law of the closed form: ``t`` a distribution;
    levels that exist (``P_(i*) <= m^k``, ``1 - m^k <= p(off H*, q > 0)``); ``t = max(p, mu q)`` on
    ``H*`` and ``min(p, lam q)`` off it; conditions (i)-(iii); ``sum min(p, t) = alpha*``."""
    p, q, t, k, m = plan.p, plan.q, plan.t, plan.k, plan.m
    inside, outside = plan.inside, [x for x in range(plan.V) if x not in plan.inside]
    problems = []
    if any(v < 0 for v in t) or _sum(t) != 1:
        problems.append(f"t = {t} is not a distribution")
    if _sum(p[x] for x in inside) > m**k or 1 - m**k > _sum(p[x] for x in outside if q[x] > 0):
        problems.append("a level does not exist")
    if plan.mu is not None and any(t[x] != max(p[x], plan.mu * q[x]) for x in inside):
        problems.append(f"t != max(p, mu q) on H* (mu = {plan.mu})")
    if plan.lam is not None and any(t[x] != min(p[x], plan.lam * q[x]) for x in outside):
        problems.append(f"t != min(p, lam q) off H* (lam = {plan.lam})")
    names = ("(iii) t(H*) = m^k", "(i) t >= p on H*", "(ii) t <= p off H*")
    problems += [f"{name} fails by {v}" for name, v in zip(names, slack_terms(plan, t)) if v]
    if _sum(min(a, b) for a, b in zip(p, t)) != plan.alpha:
        problems.append("sum min(p, t) != alpha*")
    return problems


def random_rule_law(q: Law, k: int, rng: random.Random) -> Law:
    """The law of the selected token under a random selection rule of k i.i.d. candidates: each tuple
    gets a random distribution over its positions (half the rules: the candidate first in a random
    priority order of the tokens)."""
    V, out = len(q), [ZERO] * len(q)
    priority = rng.sample(range(V), V) if rng.random() < 0.5 else None
    for tup, prob in tuple_laws(q, k).items():
        if priority is not None:
            out[min(tup, key=priority.index)] += prob
            continue
        raw = [Fraction(rng.randint(0, 5)) for _ in tup]
        for x, w in zip(tup, normalise(raw if any(raw) else [Fraction(1)] * k)):
            out[x] += prob * w
    return tuple(out)


def check_conditions() -> Outcome:
    MIN = sp.Min(P, T)
    per_token = by_cases(MIN - (P - sp.Max(P - T, 0)), T_CASES) and by_cases(MIN - (T - sp.Max(T - P, 0)), T_CASES)
    bad = [f"{inst}: {m}" for inst in plan_cases() for m in condition_problems(plan_of(inst))]
    rng = random.Random(906)
    rule_bad, rules, optimal_rules = [], 0, 0
    for _, inst in enumeration_cases():
        plan = plan_of(inst)
        for s in [plan.f] + [random_rule_law(inst.q, inst.k, rng) for _ in range(4)]:
            rules += 1
            rule_bad += [f"{inst}, s = {s}: {m}" for m in bound_problems(plan, s)]
            optimal_rules += _sum(min(a, b) for a, b in zip(inst.p, s)) == plan.alpha
    derivation = f"""
**Any selection law is bounded by `alpha*`.** Let `s` be the law of the token selected from `k`
i.i.d. candidates by any rule. Whenever every candidate lies in `H*` (probability `m^k`) the selected
one does, so `s(H*) >= m^k`. Per token, by cases,
{display_eq(MIN, P - sp.Max(P - T, 0))}
{display_eq(MIN, T - sp.Max(T - P, 0))}
(`t` standing for `s`). Use the first form on `H*` and the second off it, with `s(off H*) = 1 - s(H*)`
and `alpha* = 1 + p(H*) - m^k`:
{SLACK_FORMULA}
All three subtracted terms are `>= 0`, so `sum min(p, s) <= alpha*`, with equality iff
(i) `s >= p` on `H*`, (ii) `s <= p` off `H*`, (iii) `s(H*) = m^k`.

**`t` meets them.** On `H*`, `t = max(p, mu q) >= p`; off `H*`, `t = min(p, lam q) <= p`: (i) and (ii)
hold for any levels. (iii) is the choice of `mu`; the levels exist:
`mu -> sum_(H*) max(p, mu q)` is continuous and non-decreasing from `P_(i*)` (at `mu = 0`) without
bound (every token of `H*` has `q > 0`), and `P_(i*) <= m^k` because `i*` beats `i = 0`
(`Q_0^k - P_0 = 0`). `lam -> sum_(off H*) min(p, lam q)` is continuous and non-decreasing from 0 up
to `p(off H*, q > 0)`, and `1 - m^k <= p(off H*, q > 0)` because `i*` beats the prefix of all finite
ratios (`Q = 1`, `P = p(q > 0)`). Both are piecewise linear with kinks at the ratios, so the levels
are exact interpolations on one piece (`resispec.theory.pooled.pooling.level`). Hence `sum min(p, t) = alpha*`: with
the canonical architecture (`pooled.canonical`) pooled accepts `alpha*`, provided `t` is the law of a
selection rule (`pooled.valid_selection_law`, `pooled.uniform_scores`).
"""
    checked = f"""
- Case analysis (SymPy, cases `p = t + d`, `t = p + d`): both per-token forms of `min(p, t)`:
  {"hold" if per_token else "FAIL"}.
- Exact rationals on the plans of the {len(plan_cases())} instances of `pooled.cut_bound`: `t` is a
  distribution; `P_(i*) <= m^k` and `1 - m^k <= p(off H*, q > 0)`; `t = max(p, mu q)` on `H*` and
  `min(p, lam q)` off it; (i), (ii), (iii) hold exactly; `sum min(p, t) = alpha*`; {tally(bad)}.
- Exact rationals on the {len(enumeration_cases())} instances of `pooled.certificate`: the laws of
  {rules} selection rules (the max-ratio rule and, per instance, four random rules: random tuple-wise
  choices or a random priority order of the tokens) all have `s(H*) >= m^k` and satisfy the slack
  identity exactly; {tally(rule_bad)}. {optimal_rules} of them happen to reach `alpha*`.
"""
    return Outcome(per_token and not bad and not rule_bad, derivation, checked)


# --- (d) t is a selection law -----------------------------------------------------------------------


def domination_problems(plan: ExactPlan) -> list[str]:
    """Why ``t`` is not realised by the plan's pools: every ratio prefix ``A_j`` must have
    ``f(A_j) = Q_j^k <= t(A_j)``, with equal block totals; ``t/q`` non-decreasing in rank within each
    block; every pool inside one block with receiver before donor, ``g > 0``, the price interval
    ``phi_z < t_z/q_z <= t_y/q_y < phi_y`` and ``M = g / (phi_y - phi_z)``; the transfers adding up to
    each token's donation or receipt; every token's pool weights ``sum_l M_l / q_x < 1``; and for
    ``k = 1``, ``t = q`` with no pools (pooled is sps)."""
    q, k, V, order = plan.q, plan.k, plan.V, plan.order
    f = [plan.f[x] for x in order]
    t = [plan.t[x] for x in order]
    qs = [q[x] for x in order]
    Q = prefix_sums(qs)
    F, Tc = prefix_sums(f), prefix_sums(t)
    problems = []
    if any(F[j] != Q[j] ** k for j in range(V + 1)):
        problems.append("f(A_j) != Q_j^k")
    if F[plan.cut] != Tc[plan.cut] or F[V] != Tc[V]:
        problems.append("block totals of f and t differ")
    short = [j for j in range(V + 1) if Tc[j] < F[j]]
    if short:
        problems.append(f"prefix domination fails at the ratio prefixes {short}")
    for block in plan.blocks():
        levels = [t[c] / qs[c] for c in block if qs[c] > 0]
        if any(a > b for a, b in zip(levels, levels[1:])):
            problems.append("t/q decreases within a block")
    moved = [ZERO] * V
    weights = [ZERO] * V
    for pool in plan.pools:
        y, z = pool.donor, pool.receiver
        in_one_block = (y < plan.cut) == (z < plan.cut)
        phi = plan.density
        priced = qs[y] > 0 and qs[z] > 0 and phi[z] < t[z] / qs[z] <= t[y] / qs[y] < phi[y]
        if not (in_one_block and z < y and pool.transfer > 0 and priced):
            problems.append(f"pool {pool} is out of order, crosses the cut or has no price")
            continue
        if pool.mass != pool.transfer / (phi[y] - phi[z]):
            problems.append(f"pool {pool} swaps a score mass other than g / (phi_y - phi_z)")
        moved[y] -= pool.transfer
        moved[z] += pool.transfer
        weights[y] += pool.mass / qs[y]
        weights[z] += pool.mass / qs[z]
    if any(moved[c] != t[c] - f[c] for c in range(V)):
        problems.append("the transfers do not add up to t - f")
    if any(w >= 1 for w in weights):
        problems.append(f"pool weights {max(weights)} >= 1")
    if k == 1 and (plan.t != q or plan.pools):
        problems.append("k = 1 but t != q or there are pools")
    return problems


def check_valid_selection_law() -> Outcome:
    J, K, c = sp.symbols("j k c", integer=True, positive=True)
    Qseq, W = sp.IndexedBase("Q"), sp.Function("W")
    telescoped = sp.summation(W(Qseq[c]) - W(Qseq[c - 1]), (c, 1, J))
    telescopes = vanishes(telescoped - (W(Qseq[J]) - W(Qseq[0])))
    s, mu, lam = sp.symbols("Q mu lambda", nonnegative=True)
    inner, outer = mu * s - s**K, 1 - s**K - lam * (1 - s)
    concave = all(sp.simplify(sp.diff(e, s, 2) + K * (K - 1) * s ** (K - 2)) == 0 for e in (inner, outer))
    qy, qz, price, e, w = sp.symbols("q_y q_z c e w", positive=True)
    # donor: f_y - q_y phi_z exceeds d_y = f_y - t_y when phi_z = c - e < c <= t_y/q_y = c + w
    # receiver: q_z phi_y - f_z exceeds r_z = t_z - f_z when phi_y = c + e > c >= t_z/q_z = c - w
    price_ok = nonnegative(qy * (price + w) - qy * (price - e)) and nonnegative(qz * (price + e) - qz * (price - w))
    symbolic_ok = telescopes and concave and price_ok
    bad = [f"{inst}: {m}" for inst in plan_cases() for m in domination_problems(plan_of(inst))]
    pools = sum(len(plan_of(i).pools) for i in plan_cases())
    derivation = f"""
**What a selection law needs.** Rank the tokens by ratio; `A_j` = the `j` lowest ranks, `Q_j = q(A_j)`.
Any rule selecting one of `k` i.i.d. candidates selects in `A_j` whenever all candidates are in
`A_j`, so its law has `s(A_j) >= Q_j^k`. The max-ratio rule (select the candidate of highest rank)
meets this with equality: its law `f_c = (F_c + q_c)^k - F_c^k` telescopes,
{display_eq(sp.Sum(W(Qseq[c]) - W(Qseq[c - 1]), (c, 1, J)), telescoped)}
with `W(Q) = Q^k`, `Q_0 = 0`: `f(A_j) = Q_j^k`. So `t` can be a selection law only if
`t(A_j) >= f(A_j)` for every `j`: prefix domination. With `t(H*) = m^k = f(H*)` (condition (iii)) and
`t(all) = 1 = f(all)` this splits into the two blocks `H*` and the rest.

**`t` dominates.** Inside, on the ranks where `t = p` (above `mu`):
`t(A_j) = m^k - (P_(i*) - P_j) >= Q_j^k` because `P_j - Q_j^k >= P_(i*) - m^k` (optimality of `i*`). On
the first stretch, where `t = mu q`, `t(A_j) = mu Q_j` and `mu Q - Q^k` is concave,
{display_eq(sp.Derivative(inner, (s, 2)), -K * (K - 1) * s ** (K - 2))}
zero at `Q = 0` and `>= 0` at the stretch's end, hence `>= 0` along it. Outside, prefix `(i*, j]`:
where `t = p` (the low ratios), `t = P_j - P_(i*) >= Q_j^k - m^k` (optimality of `i*`); on the
`lam q` stretch `t = 1 - m^k - lam (1 - Q_j)` and `1 - Q^k - lam (1 - Q)` is concave (the same second
derivative), zero at `Q = 1` and `>= 0` at the stretch's start.

**The pools realise it.** `t/q` is `max(ratio, mu)` resp. `min(ratio, lam)`: non-decreasing in rank
within each block. With cumulative donations `D_j` never ahead of the receipts `R_j` (prefix
domination), the monotone coupling's donor `min{{y : D_y > l}}` is never before its receiver
`min{{z : R_z > l}}`, and never equal (a token donates or receives, not both). A donor has
`t_y < f_y = q_y phi_y`, a receiver `t_z > q_z phi_z`, so `phi_z < t_z/q_z <= t_y/q_y < phi_y`: a price `c` in
`[t_z/q_z, t_y/q_y]` exists, and (`f_y - q_y phi_z > f_y - q_y c >= f_y - t_y = d_y`, and the mirror
image for a receiver) every token's weights `sum_l M_l / q_x = sum_l g_l / (f_y - q_y phi_(z_l))` resp.
`sum_l g_l / (q_z phi_(y_l) - f_z)` are `< sum_l g_l / d_y = 1` resp. `< sum_l g_l / r_z = 1`. Pool `l`
moves `g_l` from its donor to its receiver (`pooled.uniform_scores`), and the coupling's transfers
add up to each token's donation or receipt: the pooled rule has law `f - d + r = t`.

**k = 1.** Then `f = q`, the cut is the tokens with ratio below 1 (the first maximiser of `Q_i - P_i`),
and the levels `mu = lam = 1` give `t = max(p, q) = q` on `H*` and `t = min(p, q) = q` off it: no
pools, and pooled is sps.
"""
    checked = f"""
- Symbolic (SymPy): the telescoping sum (general `k`, `W` undefined); the second derivatives of
  `mu Q - Q^k` and `1 - Q^k - lam (1 - Q)` equal `-k (k - 1) Q^(k-2)` (general `k`); the two price gaps
  `q_y (c + w) - q_y (c - e)` and `q_z (c + e) - q_z (c - w)` are positive for positive symbols:
  {"all hold" if symbolic_ok else "FAILED"}.
- Exact rationals on the plans of the {len(plan_cases())} instances of `pooled.cut_bound` ({pools} pools in
  all): `f(A_j) = Q_j^k` and `t(A_j) >= f(A_j)` at every ratio prefix, equal block totals, `t/q`
  non-decreasing within each block, every pool inside one block with receiver before donor,
  `phi_z < t_z/q_z <= t_y/q_y < phi_y` and `M = g / (phi_y - phi_z)`, transfers adding up to `t - f`
  token by token, every token's pool weights `< 1`, and `t = q` without pools when `k = 1`;
  {tally(bad)}.
"""
    return Outcome(symbolic_ok and not bad, derivation, checked)


# --- (e) uniform scores ----------------------------------------------------------------------------


def uniform_problems(plan: ExactPlan) -> list[str]:
    """Why the pooled scores are not Uniform(0, 1) with highest-score law ``t``: every drafted token's
    interval law is a distribution that stays in its block, the score mass landing in each rank's
    interval is ``q_c``, and ``sum_c q_x pi_x(c) phi_c = t_x`` (the law of the highest of k i.i.d.
    uniform scores)."""
    q, V = plan.q, plan.V
    landing = [ZERO] * V
    problems = []
    for x in (x for x in range(V) if q[x] > 0):
        law = interval_law(plan, x)
        if any(v < 0 for v in law.values()) or _sum(law.values()) != 1:
            problems.append(f"token {x}'s interval law {law} is not a distribution")
        if any((c < plan.cut) != (x in plan.inside) for c, v in law.items() if v):
            problems.append(f"token {x}'s score leaves its block")
        for c, v in law.items():
            landing[c] += q[x] * v
        if _sum(q[x] * v * plan.density[c] for c, v in law.items()) != plan.t[x]:
            problems.append(f"the highest uniform score selects token {x} with a probability other than t")
    if any(landing[c] != q[x] for c, x in enumerate(plan.order)):
        problems.append("the score mass landing in some interval differs from its length")
    return problems


def selection_problems(plan: ExactPlan, law: PooledLaw) -> list[str]:
    """Exact enumeration: the selected token's law is ``t``, and it lies in ``H*`` iff every candidate
    does."""
    problems = []
    if law.bad_intervals:
        problems.append(f"interval laws of tokens {law.bad_intervals} are not distributions")
    if law.selected != plan.t:
        problems.append(f"selected law {law.selected} != t {plan.t}")
    if law.misplaced:
        problems.append(f"the selected token leaves H* or enters it: {law.misplaced}")
    return problems


def check_uniform_scores() -> Outcome:
    s, k = sp.Symbol("s", positive=True), sp.Symbol("k", integer=True, positive=True)
    qy, qz, M, g, c = sp.symbols("q_y q_z M g c", positive=True)
    py, pz = sp.symbols("phi_y phi_z", positive=True)
    Fc, qc = sp.symbols("F_c q_c", positive=True)
    mean = sp.integrate(k * s ** (k - 1), (s, Fc, Fc + qc)) / qc
    mean_ok = vanishes(mean - ((Fc + qc) ** k - Fc**k) / qc)
    A, B = sp.symbols("A B", positive=True)
    horner = all(vanishes(sum(B**j * A ** (n - 1 - j) for j in range(n)) * (B - A) - (B**n - A**n))
                 for n in range(1, 9))
    density_ok = vanishes((qy - M) / qy + M / qy - 1) and vanishes((qz - M) / qz + M / qz - 1)
    swap = (qy - M) * py + M * pz - qy * py
    swap_y = swap.subs(M, g / (py - pz))
    swap_z = ((qz - M) * pz + M * py - qz * pz).subs(M, g / (py - pz))
    moves = vanishes(swap_y + g) and vanishes(swap_z - g)
    two_stage_donor = g / (qy * py - c * qy) * (py - c) / (py - pz)
    two_stage_receiver = g / (c * qz - qz * pz) * (c - pz) / (py - pz)
    merged = vanishes(two_stage_donor - g / (py - pz) / qy) and vanishes(two_stage_receiver - g / (py - pz) / qz)
    symbolic_ok = mean_ok and horner and density_ok and moves and merged
    plan_bad = [f"{inst}: {m}" for inst in plan_cases() for m in uniform_problems(plan_of(inst))]
    enum_bad = [f"{inst}: {m}" for _, inst in enumeration_cases()
                for m in selection_problems(plan_of(inst), law_of(inst))]
    multisets = sum(law_of(i).multisets for _, i in enumeration_cases())
    derivation = f"""
**One candidate's score.** Rank `c` owns `I_c = [F_c, F_c + q_c)`. Without pools a candidate of token
`x` takes a score uniform on `I_x`: the score is Uniform(0, 1) and the highest of `k` scores is the
candidate of highest rank (law `f`). Pool `l` (donor `y`, receiver `z`) moves score mass `M_l` of
token `y` from `I_y` to `I_z` and `M_l` of token `z` from `I_z` to `I_y`, each spread uniformly: on `I_y`
the score density becomes
{display_eq((qy - M) / qy + M / qy, 1)}
(and the same on `I_z`). Composing the swaps (possible because each token's weights sum to less than 1,
`pooled.valid_selection_law`) every candidate's score stays Uniform(0, 1), and independent of the
other candidates' (each candidate draws its own token and its own score).

**The law of the highest score.** With i.i.d. Uniform(0, 1) scores, the candidate with the highest
score has token `x` with probability `k int rho_x(s) s^(k-1) ds`, `rho_x` the sub-density of a
candidate's (token `x`, score `s`). On `I_c` the mean of `k s^(k-1)` is
{display_eq(sp.Symbol("phi_c"), mean)}
so `q_c phi_c = f_c`; multiplying out, `phi_c = sum_(j<k) (F_c + q_c)^j F_c^(k-1-j)` (no cancellation).
Swap `l` changes the law at `y` by `-M_l phi_y + M_l phi_z` and at `z` by the opposite; with
`M_l = g_l / (phi_y - phi_z)`:
{display_eq(swap, M * (pz - py))}
which is `-g_l` (and `+g_l` at `z`): the selected law is `f - d + r = t`.

**Merged and two-stage draws agree.** The two-stage draw of docs/pooled.md (the construction, step 5)
lets the donor join pool `l` with probability `g / (f_y - c q_y)` at a price `c`, then redraw on the
receiver's interval with probability `(phi_y - c)/(phi_y - phi_z)`; the receiver joins with `g / (c q_z - f_z)` and
lands on the donor's interval with `(c - phi_z)/(phi_y - phi_z)`. Both products are free of `c`:
{display_eq(two_stage_donor, sp.simplify(two_stage_donor))}
and `M_l / q_z` for the receiver: the same law of each candidate's score as the one-stage draw
(partner interval with probability `M_l / q_x`) that `resispec/verifiers/pooled/plan.py` uses.

**Pools never cross the cut.** Both blocks are coupled separately, so `H*`'s tokens score only in
`H*`'s intervals, which lie below all others: the selected token is in `H*` iff every candidate is.
"""
    checked = f"""
- Symbolic (SymPy, general `k`): the mean of `k s^(k-1)` over `I_c`; the Horner form of `phi` for
  `k = 1..8`; the density after a swap on both intervals; the swap moving `-g` at the donor and `+g`
  at the receiver; the two-stage join-and-redraw probabilities equal to `M / q_y` and `M / q_z` at any
  price: {"all hold" if symbolic_ok else "FAILED"}.
- Exact rationals on the plans of the {len(plan_cases())} instances of `pooled.cut_bound`: every drafted
  token's interval law is a distribution inside its block; the score mass landing in `I_c` is `q_c`
  for every rank (scores Uniform(0, 1)); `sum_c q_x pi_x(c) phi_c = t_x` for every token;
  {tally(plan_bad)}.
- Exact enumeration on the {len(enumeration_cases())} instances of `pooled.certificate` ({multisets}
  candidate multisets): for each, the law of the highest score given the candidates as the exact
  integral over the winner's position `v` of `pi_i(c) prod_(j != i) (C_j(c) + pi_j(c) v)` (polynomials in
  rationals); summed with the multiset probabilities, the selected token's law is exactly `t`, and the
  selected token is in `H*` exactly when every candidate is; {tally(enum_bad)}.
"""
    return Outcome(symbolic_ok and not plan_bad and not enum_bad, derivation, checked)


# --- (f) the certificate ------------------------------------------------------------------------------


def certificate_problems(plan: ExactPlan, law: PooledLaw) -> list[str]:
    """Why pooled is not exact and optimal on this instance: its law must be ``p``, its acceptance the
    least cut value over all sets, and no rejection may emit a candidate."""
    problems = []
    if law.bad_intervals:
        problems.append(f"interval laws of tokens {law.bad_intervals} are not distributions")
    if law.law != plan.p:
        problems.append(f"law {law.law} != p")
    best = alpha_star_subsets(plan.p, plan.q, plan.k)
    if law.acceptance != best:
        problems.append(f"acceptance {law.acceptance} != alpha* {best}")
    if law.collision or law.stranded:
        problems.append(f"a rejection emits a candidate with probability {law.collision + law.stranded}")
    return problems


def check_certificate() -> Outcome:
    bad = [f"{name}, {inst}: {m}" for name, inst in enumeration_cases()
           for m in certificate_problems(plan_of(inst), law_of(inst))]
    rejecting = sum(law_of(i).acceptance < 1 for _, i in enumeration_cases())
    pooled = sum(bool(plan_of(i).pools) for _, i in enumeration_cases())
    derivation = """
On each instance the whole verifier is evaluated in exact rationals: every multiset of `k` i.i.d.
candidates (probability: multinomial coefficient times the product of `q`), the law of the selected
token given the candidates (`pooled.uniform_scores`), acceptance `min(1, p(y)/t(y))`, and the residual
`norm((p - t)+)`. Its law must be `p` and its acceptance the least cut value `min_H [p(H) + 1 - q(H)^k]`
over all `2^V` sets (computed without the ratio order or the plan): a verifier that is exact and
reaches the upper bound of `pooled.cut_bound` is an optimal solution of the transport LP, certified
by the matching cut. Why it holds in general: the selected law is `t` (`pooled.uniform_scores`), so
the law is `p` (`pooled.canonical`) and the acceptance `sum min(p, t) = alpha*`
(`pooled.optimal_conditions`). A rejection needs `t(y) > p(y)`, so `y in H*`, hence every candidate in
`H*`; the residual `(p - t)+` lives off `H*` (condition (i)), so a rejection never emits a candidate:
acceptance (a candidate is emitted) is exactly `sum min(p, t)`.
"""
    checked = f"""
- Exact rationals on {len(enumeration_cases())} instances (`V` 3..5, `k` 1..3): the corner pairs
  {", ".join(f"`{n}`" for n in CORNERS)} at `k = 1, 2, 3`, and 40 seeded pairs (half with zeros).
  {pooled} of them have pools and {rejecting} have acceptance below 1.
  On every one the exact law is `p`, the acceptance equals `min_H [p(H) + 1 - q(H)^k]` over all
  `2^V` sets, and a rejection's residual draw never equals a candidate; {tally(bad)}.
"""
    return Outcome(not bad, derivation, checked)


THEOREMS = [
    Theorem(
        name="pooled.cut_bound",
        statement=(
            "Any exact verifier of k i.i.d. candidates accepts at most p(H) + 1 - q(H)^k for every token set H; the "
            "least bound alpha* is attained at pooled's cut H*, the first maximising ratio prefix of Q_i^k - P_i, and "
            "pooled's exact law saturates that cut."
        ),
        method="exact rational arithmetic (bound and prefix reduction: iid_optimum.min_cut, iid_optimum.prefixes)",
        check=check_cut_bound,
    ),
    Theorem(
        name="pooled.canonical",
        statement=(
            "Selecting a candidate by any rule whose selected token has law t, then accepting it with min(1, p/t) and "
            "otherwise emitting from norm((p - t)+), emits exactly p with acceptance sum min(p, t)."
        ),
        method="case analysis + exact rational arithmetic",
        check=check_canonical,
    ),
    Theorem(
        name="pooled.optimal_conditions",
        statement=(
            "Every selection law s of k i.i.d. candidates has s(H*) >= m^k and sum min(p, s) = alpha* - [s(H*) - m^k] "
            "- sum_{H*} (p - s)+ - sum_{off H*} (s - p)+ <= alpha*, with equality iff (i) s >= p on H*, (ii) s <= p "
            "off H*, (iii) s(H*) = m^k; the closed-form t = max(p, mu q) on H*, min(p, lam q) off it, has levels that "
            "exist and meets all three."
        ),
        method="case analysis + exact rational arithmetic",
        check=check_conditions,
    ),
    Theorem(
        name="pooled.valid_selection_law",
        statement=(
            "t dominates the max-ratio law f on every ratio prefix (t(A_j) >= Q_j^k = f(A_j), necessary for any "
            "selection law) with equal block totals, so the monotone coupling of each block pairs every donor with a "
            "lower-ranked receiver at a price in [t_z/q_z, t_y/q_y], and every token's pool weights sum to less than 1."
        ),
        method="symbolic identity + exact rational arithmetic",
        check=check_valid_selection_law,
    ),
    Theorem(
        name="pooled.uniform_scores",
        statement=(
            "Each pool swap keeps the score density 1 on both intervals and moves g from donor to receiver, so every "
            "candidate's score stays Uniform(0, 1) and independent, and the highest-score candidate's token has law "
            "exactly t (never leaving or entering H* unless every candidate does); the one-stage draw equals the "
            "two-stage draw of docs/pooled.md at any price."
        ),
        method="symbolic identity + exact rational arithmetic + exact enumeration",
        check=check_uniform_scores,
    ),
    Theorem(
        name="pooled.certificate",
        statement=(
            "Instance by instance, pooled's exact law (every i.i.d. candidate tuple, selection and verification "
            "randomness integrated out in exact rationals) equals p, its acceptance equals the least cut value alpha* "
            "over all token sets, and no rejection emits a candidate."
        ),
        method="exact enumeration in rationals + cut certificate",
        check=check_certificate,
    ),
]
