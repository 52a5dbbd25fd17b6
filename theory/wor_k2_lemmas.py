"""resispec_wor at k = 2: the complementary-slackness lemmas of the optimal-stopping certificate
(``theory.wor_lp``), per token and by cases, as SymPy identities.

One drafted token, with ``w = q / (1 - q)`` (so ``q = w / (1 + w)``), the root ``S >= 0`` and
``T = q (1 + S) - r`` the unclipped ``t``. The latest-first plan has ``t = clip(T, 0, w)``,
``A = q - t (1 - q)``, ``C = q (S - t)`` (``resispec_wor.k2_plan``), residual ``f = (r - A - C)+``.
Its classes (``theory.wor_lp.classes``): ``R = {A = q, f > 0}``, ``Z = {A = 0, r < C}``, ``I`` the rest.
"""

from __future__ import annotations

import sympy as sp

from theory.symbolic import nonnegative, settle, vanishes

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
    """The certificate's class, decided symbolically (``theory.wor_lp.classes``)."""
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
    """``mu``, ``lambda``, ``nu`` and the ``m(x)`` column's slack of a class (``theory.wor_lp``)."""
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
