"""resispec_wor at k = 2: the general steps of the optimality proof (``resispec.theory.resispec_wor.wor_lp``'s LP and
its
optimal-stopping certificate) as SymPy identities: the node reach of the LP model, the rule's second
step reproducing the plan, primal feasibility and complementary slackness per token by exhaustive cases,
and the Lagrangian identity for every ``V``.

One drafted token, with ``w = q / (1 - q)`` (so ``q = w / (1 + w)``), the root ``S >= 0`` and
``T = q (1 + S) - r`` the unclipped ``t``. The latest-first plan has ``t = clip(T, 0, w)``,
``A = q - t (1 - q)``, ``C = q (S - t)`` (``resispec_wor.k2_plan``), residual ``f = (r - A - C)+``.
Its classes (``resispec.theory.resispec_wor.wor_lp.classes``): ``R = {A = q, f > 0}``, ``Z = {A = 0, r < C}``, ``I``
the rest.
"""

from __future__ import annotations

import sympy as sp
from sympy import Sum

from resispec.theory.common.symbolic import by_cases, nonnegative, settle, vanishes

S_, W_, T_ = sp.Symbol("S", nonnegative=True), sp.Symbol("w", positive=True), sp.Symbol("T")
D_, E_, F_ = sp.symbols("d e f", nonnegative=True)
DPOS = sp.Symbol("delta", positive=True)  # a strict gap (T < 0, T > w)
Q_ = W_ / (1 + W_)
M_ = sp.Symbol("M", nonnegative=True)  # the certificate's level, in [0, 1]


def latest_first_mass(t: sp.Expr) -> sp.Expr:
    """``A = q - t (1 - q)``, per token."""
    return Q_ - t * (1 - Q_)


# The ranges of T, in order: together they cover the real line (checked by ``cover_problems``).
T_RANGES = (("A = q", -sp.oo, 0), ("rising", 0, W_), ("A = 0", W_, sp.oo))
# Every case of a token: its T, and the class the certificate gives it. T <= 0 splits by f > 0 (R) or
# f = 0 (T = 0); T >= w by r < C (Z) or r = C (T = w). The rising case is interior (I).
TOKEN_CASES: dict[str, tuple[sp.Expr, str]] = {
    "A = q, T < 0": (-DPOS, "R"),
    "A = q, T = 0": (sp.Integer(0), "I"),
    "rising, 0 <= T <= w": (E_, "I"),  # with w = e + f below
    "A = 0, T = w": (W_, "I"),
    "A = 0, T > w": (W_ + DPOS, "Z"),
}
RISING = {W_: E_ + F_}


def cover_problems() -> list[str]:
    """The ranges of ``T`` cover the real line: the first starts at -oo, the last ends at +oo, each is
    non-empty (lower <= upper) and each starts where the previous one ends."""
    problems = []
    if T_RANGES[0][1] != -sp.oo or T_RANGES[-1][2] != sp.oo:
        problems.append("the ranges do not reach both infinities")
    for (name, lo, hi), (nxt, lo2, _) in zip(T_RANGES, (*T_RANGES[1:], (None, None, None))):
        if lo != -sp.oo and hi != sp.oo and not nonnegative(hi - lo):
            problems.append(f"range {name} is empty")
        if nxt is not None and not vanishes(hi - lo2):
            problems.append(f"gap between {name} and {nxt}")
    return problems


def token_values(T: sp.Expr, extra: dict | None = None) -> dict[str, sp.Expr]:
    """``A``, ``C``, ``r``, ``f`` and the slacks of one token at unclipped ``T`` (each Min/Max settled)."""
    sub = extra or {}
    t = settle(sp.Min(sp.Max(T, 0), W_).subs(sub))
    q = Q_.subs(sub)
    A = settle(latest_first_mass(t).subs(sub))
    C = q * (S_ - t)
    r = q * (1 + S_) - T.subs(sub)
    accepted_second = settle(sp.Min(sp.simplify(r - A), C))  # m(y) + sum_x m(x, y) - A = min(r - A, C)
    return {
        "q": q, "A": A, "C": C, "r": r,
        "f": settle(sp.Max(r - A - C, 0)),
        "reach slack": C - accepted_second,  # P(x y) - m(x, y) - m(x) q_y / (1 - q_x), summed over x
        "budget slack": r - A - accepted_second,  # p_y - m(y) - sum_x m(x, y)
    }


def class_of(v: dict[str, sp.Expr]) -> str:
    """The certificate's class, decided symbolically (``resispec.theory.resispec_wor.wor_lp.classes``)."""
    a_is_q = vanishes(v["A"] - v["q"])
    a_is_0 = vanishes(v["A"])
    f_pos = bool(sp.simplify(v["f"]).is_positive)
    r_below_c = bool(sp.factor(sp.simplify(v["C"] - v["r"])).is_positive)
    if a_is_q and f_pos:
        return "R"
    if a_is_0 and r_below_c:
        return "Z"
    return "I"


def multipliers(cls: str) -> dict[str, sp.Expr]:
    """``mu``, ``lambda``, ``nu`` and the ``m(x)`` column's slack of a class
    (``resispec.theory.resispec_wor.wor_lp``)."""
    mu = {"R": 1, "Z": 0, "I": M_}[cls]
    nu = (1 - M_) / (1 - Q_) if cls == "R" else 0
    column = 0 + (1 - mu) + nu + (M_ - mu * Q_) / (1 - Q_) - 1  # lambda + nu + continuation - 1
    return {"mu": sp.sympify(mu), "lambda": 1 - sp.sympify(mu), "nu": sp.sympify(nu), "column slack": column}


def k2_slackness_lemmas() -> dict[str, bool]:
    """Per case of ``TOKEN_CASES``: the class the case is said to have is the class the definitions give;
    ``A = 0`` implies ``r <= C`` (``C - r >= 0``) wherever ``A = 0``; and every complementary product is 0:
    ``lambda_y`` x budget slack, ``mu_y`` x reach slack, ``nu_x (q - A)``, ``A`` x the ``m(x)`` column's
    slack. The ``T``-ranges cover the reals, and ``d > 0`` / ``d = 0`` cover ``d >= 0``, so the cases are
    exhaustive; every token is in exactly one class (``R`` needs ``A = q > 0``, ``Z`` needs ``A = 0``).

    Per token suffices: ``mu_xy = mu_y`` for every ``x``, and the node slacks
    ``P(x y) - m(x, y) - m(x) q_y / (1 - q_x) = (q_x - A_x) q_y (1 - a_2(y)) / (1 - q_x) >= 0`` sum over ``x``
    to ``C(y) (1 - a_2(y)) = C - min(r - A, C)``, the token's reach slack; the budget row of ``y`` has
    slack ``r - A - min(r - A, C)``."""
    out = {"the T-ranges cover the real line": not cover_problems()}
    for name, (T, cls) in TOKEN_CASES.items():
        extra = RISING if name.startswith("rising") else {}
        v = token_values(T, extra)
        out[f"{name}: class {cls}"] = class_of(v) == cls
        if vanishes(v["A"]):
            out[f"{name}: A = 0 implies r <= C"] = nonnegative(sp.simplify(v["C"] - v["r"]))
        elif name.startswith("rising"):  # A = 0 only at T = w, where r - C = A = 0
            out[f"{name}: r - C = A, so A = 0 implies r = C"] = vanishes(v["r"] - v["C"] - v["A"])
        mult = {key: sp.sympify(val).subs(extra) for key, val in multipliers(cls).items()}
        products = {
            "lambda x budget slack": mult["lambda"] * v["budget slack"],
            "mu x reach slack": mult["mu"] * v["reach slack"],
            "nu (q - A)": mult["nu"] * (v["q"] - v["A"]),
            "A x column slack": v["A"] * mult["column slack"],
        }
        for what, expr in products.items():
            out[f"{name}: {what}"] = vanishes(expr)
    return out


# --- the rule's second step and primal feasibility, per token ------------------------------------------

L_, KAPPA, G_ = sp.symbols("l kappa g", nonnegative=True)
CPOS, FPOS, QNPOS = sp.symbols("C |f| q'", positive=True)


def second_step_lemmas() -> dict[str, bool]:
    """At ``k = 2`` the rule's step 2 reproduces the plan. After rejecting ``x`` the target is
    ``r_x = q'(y) a_2(y) + kappa f(y) / |f|`` (``q' = q_{-x}``, ``kappa = 1 - <q', a_2> >= 0``) and the sps
    step accepts ``y`` with ``min(1, r_x(y) / q'(y))``; with ``l = r - A`` and ``a_2 = min(1, l / C)``,
    ``f = (l - C)+``, by cases ``l < C`` (``f = 0``) and ``l >= C`` (``a_2 = 1``): that acceptance is
    ``a_2(y)``, and ``C a_2 = min(l, C)``. So node ``(x, y)`` accepts ``s_x q_y / (1 - q_x) a_2(y)`` and,
    summed over ``x`` (the definition of ``C``), token ``y`` is accepted at step 2 with ``min(r - A, C)``."""
    d = sp.Symbol("delta", positive=True)
    out = {}
    for name, case in {"l < C": {CPOS: L_ + d}, "l >= C": {L_: CPOS + G_}}.items():
        a2 = sp.Min(1, L_ / CPOS)
        f = sp.Max(L_ - CPOS, 0)
        ratio = a2 + KAPPA * f / (FPOS * QNPOS)
        out[f"{name}: sps accepts a_2"] = by_cases(sp.Min(1, ratio) - a2, [case])
        out[f"{name}: C a_2 = min(r - A, C)"] = by_cases(CPOS * a2 - sp.Min(L_, CPOS), [case])
        out[f"{name}, f = 0 everywhere (r_x = q' a_2): sps accepts a_2"] = by_cases(sp.Min(1, a2) - a2, [case])
    out["C = 0: a_2 = 1 and min(r - A, 0) = 0"] = vanishes(sp.Min(L_, 0))
    return out


SIGMA = sp.Symbol("sigma", nonnegative=True)  # S - t_y: the other drafted tokens' t, >= 0


def feasibility_lemmas() -> dict[str, bool]:
    """The plan's masses are primal feasible, per token in every case (``S = t + sigma``, ``sigma >= 0``
    the other tokens' ``t``): ``0 <= A <= q`` (``nu`` row), ``C >= 0``, and ``r - A >= 0`` (so
    ``a_2 = min(1, (r - A)/C)`` is in ``[0, 1]``: node rows hold with slack ``(1 - a_2) >= 0`` times the
    reach); in the ``A = 0`` cases ``r - A = r >= 0`` is given. The budget row holds because
    ``A + min(r - A, C) <= r``."""
    out = {}
    for name, (T, _) in TOKEN_CASES.items():
        extra = RISING if name.startswith("rising") else {}
        t = settle(sp.Min(sp.Max(T, 0), W_).subs(extra))
        v = {key: sp.simplify(sp.sympify(val).subs(S_, t + SIGMA)) for key, val in token_values(T, extra).items()}
        out[f"{name}: 0 <= A <= q, C >= 0"] = all(nonnegative(e) for e in (v["A"], v["q"] - v["A"], v["C"]))
        if not vanishes(v["A"]):
            out[f"{name}: r - A >= 0"] = nonnegative(v["r"] - v["A"])
    return out


# --- the Lagrangian identity of the k = 2 WOR LP, for every V -------------------------------------------

_x, _y, _V = sp.symbols("x y V", integer=True, positive=True)
QF, PF, NU, LAMBDA, M1 = (sp.Function(n) for n in ("q", "p", "nu", "lambda", "m1"))
P2, M2, MU2, OFF, WQ = (sp.Function(n) for n in ("P2", "m2", "mu", "O", "w"))  # O(x, y): 1 if y != x


def _pairs(f: sp.Expr) -> Sum:
    """``sum_{x, y} O(x, y) f``, the sum over the nodes ``(x, y)``, ``y != x`` (x outer, y inner)."""
    return Sum(OFF(_x, _y) * f, (_y, 1, _V), (_x, 1, _V))


def _swap(s: Sum) -> Sum:
    """The same double sum, y outer (Fubini over a finite rectangle)."""
    return s.reorder((0, 1))


def m1_column_own() -> sp.Expr:
    """The ``m(x)`` column's own part ``lambda_x + nu_x - 1`` (its node part ``sum_y O mu w`` is added
    in ``lagrangian_lemmas``)."""
    return LAMBDA(_x) + NU(_x) - 1


def lagrangian_lemmas() -> dict[str, bool]:
    """``D - P`` = the complementary products, for every ``V`` (``w(x, y) = q_y / (1 - q_x)``, ``O`` the
    node mask; any functions): ``D = sum q nu + sum_nodes P2 mu + sum p lambda``, ``P = sum m1 +
    sum_nodes m2``, products ``nu (q - m1)``, ``mu (P2 - m2 - m1 w)``, ``lambda_y (p_y - m1(y) -
    sum_x m2(x, y))``, ``m1 (lambda + nu + sum_y mu w - 1)``, ``m2 (lambda_y + mu - 1)``. SymPy cancels
    everything except one term: the budget rows' ``sum_y lambda_y sum_x O m2`` against the ``m2`` columns'
    ``sum_x sum_y O m2 lambda_y``, the same finite double sum in the other order (Fubini), which the
    check identifies exactly."""
    one = lambda f: Sum(f, (_x, 1, _V))  # noqa: E731
    D = one(QF(_x) * NU(_x)) + _pairs(P2(_x, _y) * MU2(_x, _y)) + one(PF(_x) * LAMBDA(_x))
    P = one(M1(_x)) + _pairs(M2(_x, _y))
    products = (
        one(NU(_x) * (QF(_x) - M1(_x)))
        + _pairs(MU2(_x, _y) * (P2(_x, _y) - M2(_x, _y))) - _pairs(MU2(_x, _y) * M1(_x) * WQ(_x, _y))
        + one(LAMBDA(_x) * (PF(_x) - M1(_x))) - _swap(_pairs(LAMBDA(_y) * M2(_x, _y)))
        + one(M1(_x) * m1_column_own()) + _pairs(M1(_x) * MU2(_x, _y) * WQ(_x, _y))
        + _pairs(M2(_x, _y) * (LAMBDA(_y) + MU2(_x, _y) - 1))
    )
    gap = sp.simplify(sp.expand(D - P - products))
    budget = _pairs(LAMBDA(_y) * M2(_x, _y))  # the budget rows' node part, summed in the two orders
    return {
        "D - P - products = the node sum of lambda_y m2 in two orders (zero by Fubini)":
            sp.simplify(gap - (_swap(budget) - budget)) == 0,
    }


def model_lemmas() -> dict[str, bool]:
    """The LP's node rows: after the first candidate ``x`` is rejected (probability ``q_x - m(x)``), the
    second is ``q_{-x}``-distributed, independently of how step 1 decided (WOR drafting), so node
    ``(x, y)`` is reached with ``(q_x - m(x)) q_y / (1 - q_x) = P(x y) - m(x) q_y / (1 - q_x)``; that
    ``m(x, y)`` is at most its reach, and the reach of the emission after two rejections, is lemma (m)
    of ``resispec.theory.resispec.seqlp_lemmas`` at each node."""
    qx, qy, m = sp.symbols("q_x q_y m", nonnegative=True)
    P_xy = qx * qy / (1 - qx)
    return {"reach of node (x, y)": vanishes((qx - m) * qy / (1 - qx) - (P_xy - m * qy / (1 - qx)))}
