"""pooled_wor (docs/pooled_wor.md): which selection laws WOR candidates allow, why select-then-verify
can always reach alpha*-WOR, and why the cut-and-scan rule and its mixtures are exact.

Candidates are k draws without replacement from q; only their set S matters to a selection law, and
``P_k(B) = P(S in B)`` for a token set B. Five theorems: (1) the achievable selection laws are
exactly ``{t : t(B) >= P_k(B) for all B, t(V) = 1}``, the base polytope of the supermodular ``P_k``,
whose vertices are the "latest in a fixed order" rules; (2) hence (Edmonds' polymatroid max-min)
``max_t sum min(p, t) = min_H [p(H) + 1 - P_k(H)] = alpha*-WOR``: select-then-verify always can
reach the WOR optimum, no counterexample exists; (3) the scan rule's law ``t_y = L_y + theta_y
(D_y - L_y)`` and the race integral that computes D and L without enumerating tuples; (4) pooled_wor
emits p exactly. All checks are exact rational arithmetic.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from fractions import Fraction
from functools import cache

from resispec.theory.common.arith import Exact
from resispec.theory.common.exact import Instance, Law, from_weights, instances
from resispec.theory.common.sequential import emit
from resispec.theory.common.symbolic import latex_block
from resispec.theory.pooled.pooled import canonical_law
from resispec.theory.registry import Outcome, Theorem, tally
from resispec.theory.rejection.rrs_wor import SPSChainWOR

ZERO = Fraction(0)
Sets = dict[frozenset[int], Fraction]

SUPERMODULAR = latex_block(r"P_k(A \cup B) + P_k(A \cap B) \ge P_k(A) + P_k(B).")
MAX_MIN = latex_block(r"\max\{z(V) : z \in P(g),\ z \le p\} = \min_A\, [\,g(A) + p(V \setminus A)\,]"
                      r" = \min_H\, [\,p(H) + 1 - P_k(H)\,] = \alpha^*_{\mathrm{WOR}}")
SCAN_LAW = latex_block(r"t_y = L_y + \theta_y (D_y - L_y),")
RACE = latex_block(r"A = \prod_x (e_x + w_x r_x X),\quad B = \sum_z q_z e_z w_z \prod_{x \ne z} (e_x + w_x r_x X)"
                   r" \pmod{X^k},\quad E = \int_0^\infty [X^{k-1}]\, B\, dT")

CORNERS: dict[str, tuple[Law, Law]] = {
    "p == q": (from_weights(5, 3, 2, 1), from_weights(5, 3, 2, 1)),
    "one-hot p": (from_weights(0, 1, 0, 0), from_weights(4, 1, 3, 2)),
    "disjoint supports": (from_weights(6, 4, 0, 0), from_weights(0, 0, 7, 3)),
    "ratio ties": (from_weights(2, 4, 6, 8), from_weights(4, 8, 3, 5)),
    "zeros in both": (from_weights(0, 1, 0, 1, 2), from_weights(3, 0, 1, 3, 4)),
    "heavy draft token": (from_weights(1, 1, 1, 1), from_weights(12, 1, 1, 1)),
}


def _sum(values) -> Fraction:
    return sum(values, ZERO)


@cache
def cases() -> tuple[Instance, ...]:
    """The corners at every feasible k in 1..3 and 60 seeded instances (V 3..5, k 1..4, half with zeros)."""
    out = [Instance(p, q, k) for p, q in CORNERS.values() for k in (1, 2, 3)
           if sum(1 for v in q if v > 0) >= k]
    for seed, zeros in ((1701, False), (1702, True)):
        out += [i for i in instances(seed=seed, count=30, V_range=(3, 5), k_range=(1, 4), zeros=zeros)
                if sum(1 for v in i.q if v > 0) >= i.k]
    return tuple(out)


@cache
def wor_sets(q: Law, k: int) -> Sets:
    """``P(S = set)`` for k successive draws without replacement: each ordered tuple has probability
    ``prod_i q(x_i) / (1 - q(x_1) - ... - q(x_{i-1}))``."""
    sets: Sets = defaultdict(Fraction)
    support = [x for x, v in enumerate(q) if v > 0]
    for tup in itertools.permutations(support, k):
        prob, left = Fraction(1), Fraction(1)
        for x in tup:
            prob *= q[x] / left
            left -= q[x]
        sets[frozenset(tup)] += prob
    return dict(sets)


def subsets(V: int) -> list[frozenset[int]]:
    return [frozenset(c) for r in range(V + 1) for c in itertools.combinations(range(V), r)]


def all_in(sets: Sets, B: frozenset[int]) -> Fraction:
    """``P_k(B)``: the probability that every candidate lies in B."""
    return _sum(prob for S, prob in sets.items() if S <= B)


def hall_problems(sets: Sets, V: int, t: Law) -> list[str]:
    """Why t is not in the base polytope: ``t(V) = 1`` and ``t(B) >= P_k(B)`` for every B."""
    problems = [] if _sum(t) == 1 else [f"t sums to {_sum(t)}"]
    for B in subsets(V):
        if _sum(t[x] for x in B) < all_in(sets, B):
            problems.append(f"t({sorted(B)}) < P_k = {all_in(sets, B)}")
    return problems


def alpha_wor(p: Law, sets: Sets) -> Fraction:
    """``min over all token sets H of p(H) + 1 - P_k(H)`` (the min cut of the WOR transport LP)."""
    return min(_sum(p[x] for x in H) + 1 - all_in(sets, H) for H in subsets(len(p)))


# --- (1) achievable selection laws ----------------------------------------------------------------


def latest_law(sets: Sets, V: int, order: tuple[int, ...]) -> Law:
    """Law of "select the candidate latest in ``order``", by enumeration of the sets."""
    where = {x: i for i, x in enumerate(order)}
    law = [ZERO] * V
    for S, prob in sets.items():
        law[max(S, key=where.__getitem__)] += prob
    return tuple(law)


def greedy_vertex(sets: Sets, V: int, order: tuple[int, ...]) -> Law:
    """``f_{order_i} = P_k(A_i) - P_k(A_{i-1})``, ``A_i`` the first i tokens of ``order``."""
    law = [ZERO] * V
    for i, x in enumerate(order):
        law[x] = all_in(sets, frozenset(order[:i + 1])) - all_in(sets, frozenset(order[:i]))
    return tuple(law)


def check_achievable() -> Outcome:
    rng = random.Random(1703)
    super_bad, vertex_bad, hall_bad, orders = [], [], [], 0
    for inst in cases():
        sets, V = wor_sets(inst.q, inst.k), inst.V
        all_sets = subsets(V)
        value = {B: all_in(sets, B) for B in all_sets}
        super_bad += [f"{inst}: A={sorted(A)}, B={sorted(B)}" for A in all_sets for B in all_sets
                      if value[A | B] + value[A & B] < value[A] + value[B]]
        for order in itertools.permutations(range(V)):
            orders += 1
            f = latest_law(sets, V, order)
            if f != greedy_vertex(sets, V, order):
                vertex_bad.append(f"{inst}, order {order}")
        for _ in range(3):  # a random rule: each set picks its members with random rational weights
            law = [ZERO] * V
            for S, prob in sets.items():
                members = sorted(S)
                w = [Fraction(rng.randint(0, 5)) for _ in members]
                w = w if sum(w) else [Fraction(1)] * len(members)
                for x, wx in zip(members, w):
                    law[x] += prob * wx / sum(w)
            hall_bad += [f"{inst}: {m}" for m in hall_problems(sets, V, tuple(law))]
    derivation = f"""
Only the set `S` of the `k` distinct candidates matters to which token a rule can select (a rule may
also read the draw order and private randomness, which only mixes set-by-set choices). A *selection
law* is `t(y) = P(the selected candidate is y)`. Write `P_k(B) = P(S ⊆ B)`.

*Necessity.* Whenever `S ⊆ B`, the selected candidate is in `B`, so `t(B) >= P_k(B)` for every `B`,
and `t(V) = 1`.

*Supermodularity.* Pointwise, `1[S ⊆ A ∪ B] + 1[S ⊆ A ∩ B] >= 1[S ⊆ A] + 1[S ⊆ B]` (if `S` lies in both
`A` and `B` both sides are 2; if in one, the left is at least 1); taking expectations,
{SUPERMODULAR}

*Sufficiency.* For a supermodular `P_k` with `P_k(∅) = 0` the polytope
`{{t : t(B) >= P_k(B) for all B, t(V) = 1}}` is a base polytope, whose vertices are the greedy vectors
`f(π_i) = P_k(A_i) - P_k(A_(i-1))` of the orders `π` (`A_i` the first `i` tokens of `π`; Edmonds 1970).
The rule "select the candidate latest in `π`" selects `π_i` iff `π_i ∈ S ⊆ A_i`, which has probability
`P_k(A_i) - P_k(A_(i-1))`: every vertex is a rule, and drawing `π` from the mixture weights of a point
realises that point. So the achievable selection laws are exactly this polytope (Hall's condition for
the flow from sets to their members).
"""
    checked = f"""
- Exact rationals, {len(cases())} instances (the {len(CORNERS)} corners at `k = 1..3` and 60 seeded pairs,
  `V` 3..5, `k` 1..4, half with zeros; WOR set probabilities by enumerating ordered tuples):
  supermodularity of `P_k` on every pair of token sets, {tally(super_bad)}; for all {orders} orders,
  the enumerated law of "latest in the order" equals the greedy vector, {tally(vertex_bad)}; 3 random
  set-by-set rules per instance satisfy every Hall inequality, {tally(hall_bad)}.
"""
    return Outcome(not (super_bad or vertex_bad or hall_bad), derivation, checked)


# --- (2) alpha*-WOR is reachable by select-then-verify -------------------------------------------


def optimal_law(p: Law, sets: Sets) -> tuple[Law, Law]:
    """``(z, t)``: the polymatroid greedy ``z`` (largest ``z <= p`` with ``z(A) <= g(A)``,
    ``g(A) = 1 - P_k(V - A)`` the probability that S meets A) in token order, and a base ``t >= z``
    (each token raised as far as every set containing it allows)."""
    V = len(p)
    everything = frozenset(range(V))
    all_sets = subsets(V)
    meets = {A: 1 - all_in(sets, everything - A) for A in all_sets}
    capped = {A: min(meets[B] + _sum(p[x] for x in A - B) for B in all_sets if B <= A) for A in all_sets}
    z = [capped[frozenset(range(i + 1))] - capped[frozenset(range(i))] for i in range(V)]
    t = list(z)
    for y in range(V):
        t[y] += min(meets[A] - _sum(t[x] for x in A) for A in all_sets if y in A)
    return tuple(z), tuple(t)


def check_ceiling() -> Outcome:
    bad, prefix_equal = [], 0
    for inst in cases():
        sets, V, p = wor_sets(inst.q, inst.k), inst.V, inst.p
        z, t = optimal_law(p, sets)
        best = alpha_wor(p, sets)
        problems = [f"z > p at {y}" for y in range(V) if z[y] > p[y]] + hall_problems(sets, V, t)
        if _sum(z) != best or _sum(min(a, b) for a, b in zip(p, t)) != best:
            problems.append(f"z(V) = {_sum(z)}, sum min(p, t) = {_sum(min(a, b) for a, b in zip(p, t))}, "
                            f"alpha*-WOR = {best}")
        bad += [f"{inst}: {m}" for m in problems]
        ratio = sorted(range(V), key=lambda x: (0, p[x] / inst.q[x], x) if inst.q[x] else (1, ZERO, x))
        prefix = min(_sum(p[x] for x in ratio[:i]) + 1 - all_in(sets, frozenset(ratio[:i])) for i in range(V + 1))
        prefix_equal += prefix == best
    derivation = f"""
Any select-then-verify rule accepts `sum min(p, t)` (Theorem `pooled.canonical`), so its best is the
maximum over the achievable laws of Theorem `pooled_wor.achievable_laws`. With
`g(A) = P(S meets A) = 1 - P_k(V - A)` (submodular), `t` is achievable iff `t(A) <= g(A)` for all `A` and
`t(V) = 1`. The vector `z = min(p, t)` lies in the polymatroid `P(g)` and below `p`; conversely every
`z` in `P(g)` below `p` extends to a base `t >= z` (raise coordinates until a set is tight), and then
`sum min(p, t) >= z(V)`. Edmonds' max-min theorem for a polymatroid intersected with the box `z <= p`:
{MAX_MIN}
(`H = V - A`), the min cut of the WOR transport LP. So **select-then-verify reaches alpha*-WOR on
every instance**; there is no counterexample, and what remains is an efficient rule. At an optimum
with a minimising `H*`: `t >= p` on `H*`, `t <= p` off it and `t(H*) = P_k(H*)`, because
`sum min(p, t) <= p(H*) + t(V - H*) = p(H*) + 1 - t(H*) <= p(H*) + 1 - P_k(H*)`.
"""
    checked = f"""
- Exact rationals, the {len(cases())} instances of `pooled_wor.achievable_laws`: the greedy `z`
  (computed from the box-truncated rank `min_(B ⊆ A) [g(B) + p(A - B)]` over all sets) is below `p`,
  its raised base `t` satisfies every Hall inequality, and `z(V) = sum min(p, t)` equals the least
  `p(H) + 1 - P_k(H)` over all `2^V` sets; {tally(bad)}.
- Observed on the same instances: the least value over ratio prefixes equals the least over all sets
  on {prefix_equal} of {len(cases())} (docs/resispec_wor.md: prefixes are not known to suffice).
"""
    return Outcome(not bad, derivation, checked)


# --- (3) the scan rule's law and its race integral ------------------------------------------------


def scan_masses(sets: Sets, block: frozenset[int], inside_block: bool, scan: list[int], theta: dict[int, Fraction],
                y: int) -> tuple[Fraction, Fraction]:
    """``(D_y, L_y)`` by enumeration: y in S, the block active, every earlier-scanned candidate of S
    declined (weights ``1 - theta``), and for L no later-scanned candidate in S."""
    where = {x: i for i, x in enumerate(scan)}
    reach = fallback = ZERO
    for S, prob in sets.items():
        if y not in S or (inside_block and not S <= block):
            continue
        members = [x for x in S if x in block]
        weight = prob
        for x in members:
            if where[x] < where[y]:
                weight *= 1 - theta[x]
        reach += weight
        if all(where[x] <= where[y] for x in members):
            fallback += weight
    return reach, fallback


def scan_rule(sets: Sets, p: Law, block: frozenset[int], inside_block: bool, scan: list[int]
              ) -> tuple[dict[int, Fraction], Law]:
    """Greedy thetas along ``scan`` and the block's selection law ``L + theta (D - L)``."""
    theta: dict[int, Fraction] = {}
    law = [ZERO] * len(p)
    for y in scan:
        reach, fallback = scan_masses(sets, block, inside_block, scan, theta, y)
        spread = reach - fallback
        theta[y] = Fraction(1) if spread <= 0 else min(Fraction(1), max(ZERO, (p[y] - fallback) / spread))
        law[y] = fallback + theta[y] * spread
    return theta, tuple(law)


def scan_selection(S: frozenset[int], block: frozenset[int], inside_block: bool, scan: list[int],
                   theta: dict[int, Fraction]) -> dict[int, Fraction]:
    """The rule itself on one candidate set: visit the block's candidates in scan order, select each
    with probability theta, the last visited if all decline."""
    visit = [x for x in scan if x in S]
    chosen, left = {}, Fraction(1)
    for x in visit[:-1]:
        chosen[x] = left * theta[x]
        left -= chosen[x]
    chosen[visit[-1]] = left
    return chosen


ExpPoly = dict[Fraction, Fraction]  # rate a -> coefficient c of c e^{-a T}


def _mul(f: ExpPoly, g: ExpPoly) -> ExpPoly:
    out: ExpPoly = defaultdict(Fraction)
    for a, c in f.items():
        for b, d in g.items():
            out[a + b] += c * d
    return dict(out)


def _add(f: ExpPoly, g: ExpPoly) -> ExpPoly:
    out: ExpPoly = defaultdict(Fraction, f)
    for b, d in g.items():
        out[b] += d
    return dict(out)


def _integral(f: ExpPoly) -> Fraction:
    """``int_0^inf sum c e^{-a T} dT = sum c / a`` (the rate-0 part must vanish)."""
    if f.get(ZERO, ZERO) != 0:
        raise ValueError("divergent race integral")
    return _sum(c / a for a, c in f.items() if a != 0)


Pair = tuple[list[ExpPoly], list[ExpPoly]]


def _pair_times(u: Pair, v: Pair, k: int) -> Pair:
    """``(A1, B1)(A2, B2) = (A1 A2, A1 B2 + B1 A2)`` mod ``X^k``."""
    def poly(f: list[ExpPoly], g: list[ExpPoly]) -> list[ExpPoly]:
        out: list[ExpPoly] = [{} for _ in range(k)]
        for i in range(k):
            for j in range(k - i):
                out[i + j] = _add(out[i + j], _mul(f[i], g[j]))
        return out
    return poly(u[0], v[0]), [_add(a, b) for a, b in zip(poly(u[0], v[1]), poly(u[1], v[0]))]


def token_pair(q: Fraction, w: Fraction, k: int, forced: bool = False) -> Pair:
    """One token's pair: ``(e + w r X, q e w)`` with ``e = e^{-q T}``, ``r = 1 - e``; forced into S
    (rung and good): ``(r X, q e)``."""
    e, r = {q: Fraction(1)}, {ZERO: Fraction(1), q: Fraction(-1)}
    a: list[ExpPoly] = [{} for _ in range(k)]
    b: list[ExpPoly] = [{} for _ in range(k)]
    if not forced:
        a[0] = e
        b[0] = {q: q * w}
    else:
        b[0] = {q: q}
        w = Fraction(1)
    if k > 1:
        a[1] = {rate: w * c for rate, c in r.items()}
    return a, b


def race_value(q: Law, weights: dict[int, Fraction], y: int, k: int) -> Fraction:
    """``E[1{y in S} prod_{x in S - y} w_x]`` by the race integral of docs/pooled_wor.md, exactly."""
    pair: Pair = ([{ZERO: Fraction(1)}] + [{} for _ in range(k - 1)], [{} for _ in range(k)])
    for x, v in enumerate(q):
        if v > 0:
            pair = _pair_times(pair, token_pair(v, weights[x], k, forced=x == y), k)
    return _integral(pair[1][k - 1])


def check_scan_law() -> Outcome:
    rng = random.Random(1704)
    law_bad, race_bad, runs = [], [], 0
    for inst in cases():
        if inst.k > 3:
            continue
        sets, V, q = wor_sets(inst.q, inst.k), inst.V, inst.q
        cut = rng.randint(0, V)
        inside = frozenset(range(cut))
        for block, inside_block in ((inside, True), (frozenset(range(V)) - inside, False)):
            scan = [x for x in rng.sample(sorted(block), len(block)) if q[x] > 0]
            if not scan:
                continue
            theta = {x: Fraction(rng.randint(0, 4), 4) for x in scan}
            law = [ZERO] * V
            for S, prob in sets.items():
                if (S <= inside) == inside_block:
                    for x, c in scan_selection(S, block, inside_block, scan, theta).items():
                        law[x] += prob * c
            for i, y in enumerate(scan):
                runs += 1
                reach, fallback = scan_masses(sets, block, inside_block, scan, theta, y)
                if law[y] != fallback + theta[y] * (reach - fallback):
                    law_bad.append(f"{inst}, y = {y}")
                base = {x: (Fraction(1) if not inside_block else ZERO) for x in range(V)}
                for x in block:
                    base[x] = Fraction(1)
                for x in scan[:i]:
                    base[x] = 1 - theta[x]
                if race_value(q, base, y, inst.k) != reach:
                    race_bad.append(f"{inst}, y = {y}: D by the race {race_value(q, base, y, inst.k)} != {reach}")
                for x in scan[i + 1:]:
                    base[x] = ZERO
                if race_value(q, base, y, inst.k) != fallback:
                    race_bad.append(f"{inst}, y = {y}: L by the race != {fallback}")
    derivation = f"""
A block (inside: active iff `S ⊆ H`; outside: iff `S ⊄ H`) visits its candidates in a fixed scan
order, selects the visited `y` with probability `theta_y`, and the last visited if all decline. Let
`D_y` = P(`y ∈ S`, block active, every earlier-scanned candidate in `S` declined) and `L_y` the part of
it with no later-scanned candidate in `S`. Then `y` is selected with probability
{SCAN_LAW}
because on `L_y`'s event `y` is the last visited (selected whether or not it declines) and otherwise it
is selected iff it accepts. With weights `w_x` (`1 - theta` before `y`; after `y` 1 for `D`, 0 for `L`;
the other block's tokens 1 outside, 0 inside),
`D` or `L = E[1{{y ∈ S}} prod_(x ∈ S - y) w_x]`. In the race (clocks `Exp(q_x)`, `S` = the first `k`
arrivals), mark token `x` good with probability `w_x`: the value is the probability that `k` good
arrivals, `y` among them, come before any bad one. With `e_x = e^(-q_x T)`, `r_x = 1 - e_x`,
{RACE}
with `y`'s factor replaced by `(r_y X, q_y e_y)`: `[X^j] A` is P(no bad arrival, `j` good arrivals by
`T`), `B` the density of a good arrival at `T` on that event.
"""
    checked = f"""
- Exact rationals, {runs} scanned tokens on the instances with `k <= 3` of
  `pooled_wor.achievable_laws` (a random cut, a random scan order per block, random `theta` in
  `{{0, 1/4, .., 1}}`): the enumerated law of the rule equals `L + theta (D - L)`, {tally(law_bad)};
  `D` and `L` from the race integral, evaluated exactly (products of exponentials integrated term by
  term, `int c e^(-a T) dT = c / a`), equal the enumerated ones, {tally(race_bad)}.
"""
    return Outcome(not (law_bad or race_bad), derivation, checked)


# --- (4) pooled_wor is exact ----------------------------------------------------------------------


def pooled_wor_rule(p: Law, q: Law, k: int) -> tuple[Law, dict]:
    """The rational replica of the float plan: every minimising ratio prefix (the float plan's cap of 8
    never binds at these V), both scan directions per block, the best by ``sum min(p, t)`` (the first
    on ties). Returns ``(t, rule)``."""
    sets, V = wor_sets(q, k), len(p)
    ratio = sorted(range(V), key=lambda x: (0, p[x] / q[x], x) if q[x] else (1, ZERO, x))
    values = [_sum(p[x] for x in ratio[:i]) + 1 - all_in(sets, frozenset(ratio[:i])) for i in range(V + 1)]
    least = min(values)
    cuts = [i for i, value in enumerate(values) if value == least]
    assert len(cuts) <= 8, "the float plan would spread its tried cuts"
    best = None
    for cut in cuts:
        law, rule = [ZERO] * V, {"inside": frozenset(ratio[:cut])}
        for name, block, inside_block in (("in", ratio[:cut], True), ("out", ratio[cut:], False)):
            options = []
            for scan in (block, block[::-1]):
                drafted = [x for x in scan if q[x] > 0]
                theta, part = scan_rule(sets, p, frozenset(block), inside_block, drafted)
                options.append((_sum(min(p[x], part[x]) for x in block), drafted, theta, part))
            score, drafted, theta, part = max(options, key=lambda o: o[0])  # first on ties
            rule[name] = (drafted, theta)
            law = [a + b for a, b in zip(law, part)]
        score = _sum(min(a, b) for a, b in zip(p, law))
        if best is None or score > best[0]:
            best = (score, tuple(law), rule)
    return best[1], best[2]


def check_exact() -> Outcome:
    bad, at_optimum, above_rrs_wor, runs = [], 0, 0, 0
    for inst in cases():
        if inst.k > 3:
            continue
        runs += 1
        p, q, k = inst.p, inst.q, inst.k
        sets = wor_sets(q, k)
        t, rule = pooled_wor_rule(p, q, k)
        selected = [ZERO] * inst.V
        for S, prob in sets.items():
            inside_block = S <= rule["inside"]
            drafted, theta = rule["in" if inside_block else "out"]
            block = rule["inside"] if inside_block else frozenset(range(inst.V)) - rule["inside"]
            for x, c in scan_selection(S, block, inside_block, drafted, theta).items():
                selected[x] += prob * c
        law, acceptance = canonical_law(p, tuple(selected), t)
        problems = []
        if tuple(selected) != t:
            problems.append("the enumerated selection law differs from t")
        if law != p:
            problems.append(f"law {law} != p")
        if acceptance != _sum(min(a, b) for a, b in zip(p, t)):
            problems.append("acceptance != sum min(p, t)")
        best = alpha_wor(p, sets)
        if acceptance > best:
            problems.append(f"acceptance {acceptance} above alpha*-WOR {best}")
        bad += [f"{inst}: {m}" for m in problems]
        at_optimum += acceptance == best
        above_rrs_wor += acceptance >= emit(SPSChainWOR(p, q, k, Exact()), Exact()).acceptance
    derivation = """
pooled_wor selects by the cut-and-scan rule of Theorem `pooled_wor.scan_law` (the inside block when
every candidate lies in the cut `H`, the outside block otherwise; in each, `theta` greedy along the
scan: `theta_y = clip((p_y - L_y)/(D_y - L_y), 0, 1)`), whose law is `t = L + theta (D - L)` for any
`theta`, so its law is exactly `t`; it then verifies the selected token against `t` (Theorem
`pooled.canonical`), which emits `p` for any exact `t`. The greedy `theta` only steers acceptance:
`t_y = p_y` whenever `L_y <= p_y <= D_y`. The cut keeps `t(H) = P_k(H)` (the selected candidate lies in
`H` iff every candidate does), one of the three optimality conditions of Theorem
`pooled_wor.ceiling_reachable`; the scans aim at the other two.
"""
    checked = f"""
- Exact rationals, the {runs} instances with `k <= 3` of `pooled_wor.achievable_laws`: the rational
  replica of the float plan (every minimising ratio prefix, both scan directions per block, best
  `sum min(p, t)`), the rule run on every candidate set: selection law = `t`, emitted law = `p`,
  acceptance = `sum min(p, t)` <= alpha*-WOR; {tally(bad)}.
- Observed, not claimed: acceptance equals alpha*-WOR exactly on {at_optimum} of {runs}, and is at
  least rrs_wor's (exact rational law of `rrs_wor`) on {above_rrs_wor} of {runs}.
"""
    return Outcome(not bad, derivation, checked)


# --- (5) the mixture: where the scans fall short ---------------------------------------------------


def greedy_order(price: Law) -> tuple[int, ...]:
    """The order of tokens by ``price`` ascending (ties by token id): "latest in it" selects, in every
    set, a candidate of largest price."""
    return tuple(sorted(range(len(price)), key=lambda x: (price[x], x)))


def mixture_selection(S: frozenset[int], scan: dict[int, Fraction], scan_weight: Fraction,
                      orders: list[tuple[tuple[int, ...], Fraction]]) -> dict[int, Fraction]:
    """The mixture on one candidate set, its first uniform ``r`` integrated out region by region: on
    ``[0, w_0)`` the scan runs on ``r / w_0`` (the scan's own probabilities ``scan``), on the next
    ``w_j`` the candidate latest in order j is selected."""
    chosen = {x: scan_weight * c for x, c in scan.items()}
    for order, weight in orders:
        latest = max(S, key=order.index)
        chosen[latest] = chosen.get(latest, ZERO) + weight
    return chosen


def check_mixture() -> Outcome:
    rng = random.Random(1711)
    pricing_bad, mixture_bad, priced, mixed = [], [], 0, 0
    for inst in cases():
        sets, V, p = wor_sets(inst.q, inst.k), inst.V, inst.p
        all_orders = list(itertools.permutations(range(V)))
        for _ in range(3):  # pricing: the greedy vertex is the best vertex, and the set-by-set best
            price = tuple(Fraction(rng.randint(0, 6), rng.randint(1, 3)) for _ in range(V))
            value = _sum(a * b for a, b in zip(price, greedy_vertex(sets, V, greedy_order(price))))
            best_vertex = max(_sum(a * b for a, b in zip(price, greedy_vertex(sets, V, order))) for order in all_orders)
            set_by_set = _sum(prob * max(price[x] for x in S) for S, prob in sets.items())
            priced += 1
            if not value == best_vertex == set_by_set:
                pricing_bad.append(f"{inst}, price {price}: greedy {value}, best {best_vertex}, sets {set_by_set}")
        if inst.k > 3:
            continue
        t_scan, rule = pooled_wor_rule(p, inst.q, inst.k)
        raw = [Fraction(rng.randint(1, 5)) for _ in range(3)]  # w_0 and two random orders
        weights = [w / _sum(raw) for w in raw]
        orders = [(tuple(rng.sample(range(V), V)), w) for w in weights[1:]]
        target = [weights[0] * a for a in t_scan]
        for order, weight in orders:
            target = [a + weight * b for a, b in zip(target, greedy_vertex(sets, V, order))]
        selected = [ZERO] * V
        for S, prob in sets.items():
            inside_block = S <= rule["inside"]
            drafted, theta = rule["in" if inside_block else "out"]
            block = rule["inside"] if inside_block else frozenset(range(V)) - rule["inside"]
            scan = scan_selection(S, block, inside_block, drafted, theta)
            for x, c in mixture_selection(S, scan, weights[0], orders).items():
                selected[x] += prob * c
        law, acceptance = canonical_law(p, tuple(selected), tuple(target))
        mixed += 1
        if tuple(selected) != tuple(target) or law != p or acceptance != _sum(min(a, b) for a, b in zip(p, target)):
            mixture_bad.append(f"{inst}: selected {selected}, mixture law {target}, emitted {law}")
    derivation = """
Where the scans fall short of alpha*-WOR, the plan mixes them with vertices of the achievable-law
polytope (Theorem `pooled_wor.achievable_laws`): with probability `w_0` the scan, else "latest in order
`pi_j`" with probability `w_j`. One uniform chooses and still serves the scan: on `r < w_0` the scan
reads `r / w_0`, uniform on [0, 1) given `r < w_0` and independent of the other uniforms; on the
`j`-th next interval of length `w_j` rule `j` runs. So the selected token has law
`t = w_0 t_scan + sum_j w_j t_(pi_j)` and verifying it against `t` emits `p` (Theorem
`pooled.canonical`), for **any** weights and orders: the choice steers acceptance only.

The weights maximise `sum_y min(p_y, t_y)` over mixtures of the current columns (a linear program);
with `lambda_y >= 0` the duals of `z_y <= t_y`, a column can raise the value only if
`sum_y lambda_y t(y)` exceeds every current column's. Over all achievable laws that linear function is
largest at the vertex of the order by `lambda` ascending (Edmonds' greedy): "latest in it" selects, in
every candidate set `S`, a candidate of largest `lambda`, which is the most any rule can do set by set:
`max_t sum lambda t = sum_S P(S) max_(y in S) lambda_y`. So when that vertex prices no higher than the
current columns, the restricted LP's duals are feasible for the LP over the whole polytope, and the
value is its optimum, alpha*-WOR (Theorem `pooled_wor.ceiling_reachable`): column generation stops only
at the ceiling (or at the least ratio-prefix value, an upper bound on it, or at its round cap).
"""
    checked = f"""
- Exact rationals, {priced} random rational price vectors on the instances of `pooled_wor.achievable_laws`
  (3 each): the greedy vertex's value equals the best over all orders and the set-by-set maximum;
  {tally(pricing_bad)}.
- Exact rationals, the {mixed} instances with `k <= 3`: the rational replica's scan (Theorem
  `pooled_wor.exact`) mixed with two random orders at random rational weights, the first uniform
  integrated out region by region on every candidate set: selection law = `w_0 t_scan + sum_j w_j
  t_(pi_j)`, emitted law = `p`, acceptance = `sum min(p, t)`; {tally(mixture_bad)}.
"""
    return Outcome(not (pricing_bad or mixture_bad), derivation, checked)


THEOREMS = [
    Theorem(
        name="pooled_wor.achievable_laws",
        statement=(
            "A law t is the selection law of some rule on k WOR candidates iff t(B) >= P_k(B) = P(all candidates in B) "
            "for every token set B and t(V) = 1; P_k is supermodular and the vertices of this base polytope are the "
            "laws of 'select the candidate latest in a fixed order'."
        ),
        method="pointwise case analysis + Edmonds' greedy theorem + exact rational arithmetic",
        check=check_achievable,
    ),
    Theorem(
        name="pooled_wor.ceiling_reachable",
        statement=(
            "max over achievable selection laws t of sum min(p, t) = min_H [p(H) + 1 - P_k(H)] = alpha*-WOR: "
            "select-then-verify reaches the WOR optimum on every instance (no counterexample exists); an optimal t has "
            "t >= p on a minimising H*, t <= p off it, t(H*) = P_k(H*)."
        ),
        method="polymatroid max-min (Edmonds) + exact rational arithmetic",
        check=check_ceiling,
    ),
    Theorem(
        name="pooled_wor.scan_law",
        statement=(
            "The thinned scan (visit the active block's candidates in a fixed order, select each w.p. theta, else the "
            "last visited) selects y with probability L_y + theta_y (D_y - L_y), and D, L equal race integrals of "
            "truncated polynomial pairs (no tuple enumeration)."
        ),
        method="case analysis + exact rational arithmetic (race integrals term by term)",
        check=check_scan_law,
    ),
    Theorem(
        name="pooled_wor.exact",
        statement=(
            "pooled_wor (cut, greedy thinned scans, then single-draft verification against t) emits exactly p with "
            "acceptance sum min(p, t) <= alpha*-WOR."
        ),
        method="exact enumeration in rationals",
        check=check_exact,
    ),
    Theorem(
        name="pooled_wor.mixture",
        statement=(
            "Mixing the scan (weight w_0, its first uniform rescaled by 1/w_0) with 'latest in order pi_j' rules "
            "(weights w_j) selects with law w_0 t_scan + sum_j w_j t_pi_j, so verification against it emits p for any "
            "weights; the order by LP dual price ascending gives the best vertex, so column generation stops only at "
            "alpha*-WOR."
        ),
        method="LP duality + Edmonds' greedy + exact enumeration in rationals",
        check=check_mixture,
    ),
]
