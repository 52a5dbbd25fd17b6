"""The general steps of resispec's sequential-LP optimality proof, each an identity SymPy proves for
symbolic values (a symbolic step index ``j``, class index ``c`` and candidate count ``k``).

Notation as in ``resispec.theory.resispec.seqlp``: primal masses ``m_j(x)``, reach ``R_j = 1 - sum_{i<j} M_i`` with
``M_i = sum_x m_i(x)``; dual ``lambda_j(x)``, ``mu(x)``, row ``(j, y)``:
``lambda_j(y) + sum_{i>j} Lambda_i + mu(y) >= 1`` with ``Lambda_i = sum_x q(x) lambda_i(x)``.

(m) the model: any sequential verifier of i.i.d. candidates gives a primal feasible point;
(a) the dual family: for any ``mu >= 0``, ``lambda_j = (u_j - mu)+`` with ``u_{j-1} = sum_x q min(u_j, mu)``
    makes every row ``1 + (mu - u_j)+``;
(b) the certificate's ``u`` solves that recursion (induction on ``j``) and is non-decreasing;
(c) complementary slackness through the class map, ties at every ``T_j`` included;
(l) the Lagrangian identity ``dual - primal = sum of the complementary products`` (induction on ``k``),
    so weak duality holds and complementary slackness makes both optimal.
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy as sp
from sympy import Sum

from resispec.theory.common.symbolic import by_cases, nonnegative, vanishes

# --- (m): the model --------------------------------------------------------------------------------

_s, _x, _S, _V = sp.symbols("s x S V", integer=True, positive=True)
PI, ACC, QF = sp.Function("pi"), sp.Function("a"), sp.Function("q")  # reach of state s, a_s(x), q(x)


def model_lemmas() -> dict[str, bool]:
    """(m) A sequential verifier reaches step ``j`` in state ``s`` (any memory of earlier candidates) with
    probability ``pi(s)``, ``sum_s pi(s) = R_j``; its candidate is ``q``-distributed independently of
    ``s`` (i.i.d. drafting) and accepted with probability ``a_s(x)`` in ``[0, 1]``. Then
    ``m_j(x) = sum_s pi(s) q(x) a_s(x)``, and for ``S`` states and ``V`` tokens (symbolic):
    ``R_j q(x) - m_j(x) = sum_s pi(s) q(x) (1 - a_s(x))``, a sum of products of non-negative factors
    (capacity row); ``R_{j+1} = sum_s pi(s) sum_x q(x) (1 - a_s(x)) = R_j - M_j`` with ``sum_x q = 1``
    (the reach of the LP); and an exact verifier emits ``p(x) = sum_j m_j(x) + f(x)`` with ``f(x) >= 0``
    its final emission, so ``sum_j m_j(x) <= p(x)`` (budget row). Its acceptance is ``sum_{j,x} m_j(x)``."""
    b = sp.Symbol("1-a", nonnegative=True)
    pi_s, q_x = sp.symbols("pi_s q_x", nonnegative=True)
    R_j = Sum(PI(_s), (_s, 1, _S))
    m_j = Sum(PI(_s) * QF(_x) * ACC(_s, _x), (_s, 1, _S))
    slack = Sum(PI(_s) * QF(_x) * (1 - ACC(_s, _x)), (_s, 1, _S))
    # sum_s pi(s) sum_x q(x) (1 - a_s(x)), the inner sum split by linearity; M_j = sum_x sum_s (Fubini)
    rejected = Sum(PI(_s) * Sum(QF(_x), (_x, 1, _V)), (_s, 1, _S)) - Sum(
        PI(_s) * QF(_x) * ACC(_s, _x), (_x, 1, _V), (_s, 1, _S)
    )
    M_j = Sum(PI(_s) * QF(_x) * ACC(_s, _x), (_s, 1, _S), (_x, 1, _V)).reorder((0, 1))
    return {
        "(m) R_j q - m_j = sum_s pi q (1 - a)": sp.simplify(sp.expand(R_j * QF(_x) - m_j - slack).doit()) == 0,
        "(m) each term pi q (1 - a) >= 0": nonnegative(pi_s * q_x * b),
        "(m) R_{j+1} = R_j - M_j": sp.simplify(
            sp.expand(rejected.subs(Sum(QF(_x), (_x, 1, _V)), 1) - (R_j - M_j)).doit()
        ) == 0,
    }


# --- (a), (b): the dual family and the certificate's u ----------------------------------------------

MU_Y, U_I, D_ = sp.symbols("mu_y u_i d", nonnegative=True)
DUAL_CASES = ({MU_Y: U_I + D_}, {U_I: MU_Y + D_})  # mu(y) >= u_i and u_i >= mu(y)
u_seq = sp.IndexedBase("u")


def dual_lemmas() -> dict[str, bool]:
    """(a) for any ``mu >= 0`` with ``lambda_j = (u_j - mu)+`` and ``u_{j-1} = sum_x q min(u_j, mu)``:
    ``sum_x q lambda_j = u_j - u_{j-1}`` (per token ``(u - mu)+ = u - min(u, mu)``, and ``sum q = 1``);
    the later steps telescope, ``sum_{i>j} Lambda_i = u_k - u_j = 1 - u_j``; so row ``(j, y)`` is
    ``(u_j - mu)+ + 1 - u_j + mu = 1 + (mu - u_j)+``.
    (b) with ``mu`` = 0 on class 0 and ``u_c`` on class ``c``, the recursion reads
    ``F_j = S_j + u_j Q_j - u_{j-1} = 0`` (``S_j = sum_{1 <= c < j} q_c u_c``, ``Q_j`` the draft mass of
    classes ``>= j``; lemma (c) derives this form); ``F_{j+1} - F_j = Q_{j+1} (u_{j+1} - u_j) - (u_j - u_{j-1})``
    using ``S_{j+1} = S_j + q_j u_j`` and ``Q_j = q_j + Q_{j+1}``; ``U_j - U_{j-1} = q_0 / P_j`` with
    ``P_{j+1} = P_j Q_{j+1}`` makes that difference vanish, and the base ``F_2 = 0`` holds for
    ``U_1 = 1``, ``U_2 = 1 + q_0 / Q_2``, ``q_1 = 1 - q_0 - Q_2``. So ``F_j = 0`` for every ``j >= 2`` by
    induction, and ``U`` is non-decreasing (``q_0 / P_j >= 0``), as the class map's ``min`` needs."""
    j, k = sp.symbols("j k", integer=True, positive=True)
    lam = sp.Max(U_I - MU_Y, 0)
    S, q0, qj, Qj1, P, Q2 = sp.symbols("S q_0 q_j Q_{j+1} P Q_2", positive=True)
    uj_1, uj, uj1 = u_seq[j - 1], u_seq[j], u_seq[j + 1]
    Qj = qj + Qj1
    F_j = S + uj * Qj - uj_1
    F_next = (S + qj * uj) + uj1 * Qj1 - uj
    U_diff = {uj: uj_1 + q0 / P, uj1: uj_1 + q0 / P + q0 / (P * Qj1)}
    base = (1 - q0 - Q2) * 1 + (1 + q0 / Q2) * Q2 - 1
    return {
        "(a) (u - mu)+ = u - min(u, mu)": by_cases(lam - (U_I - sp.Min(U_I, MU_Y)), DUAL_CASES),
        "(a) telescoping step": vanishes((u_seq[k] - u_seq[j]) + (u_seq[j] - u_seq[j - 1]) - (u_seq[k] - u_seq[j - 1])),
        "(a) row (i, y) = 1 + (mu - u_i)+": by_cases(lam + 1 - U_I + MU_Y - 1 - sp.Max(MU_Y - U_I, 0), DUAL_CASES),
        "(b) F_{j+1} - F_j": vanishes(F_next - F_j - (Qj1 * (uj1 - uj) - (uj - uj_1))),
        "(b) closed form kills the difference": vanishes((Qj1 * (uj1 - uj) - (uj - uj_1)).subs(U_diff)),
        "(b) base F_2 = 0": vanishes(base),
        "(b) U non-decreasing": nonnegative(q0 / P),
    }


# --- (c): complementary slackness through the class map ---------------------------------------------

# One token x with q(x) = q > 0 and ratio rho = p(x)/q(x); the thresholds, the certificate's u and the
# step under test j are symbols.  Every case is an ordering of these values, parametrised by
# non-negative symbols (zero allowed: a tie at any T_j, between classes or between u's is inside the
# case, whichever side of the tie the class map puts the token).
PX, RHO, T1, TC, TC1, TJ, TJ1, UC, UJ = sp.symbols(
    "p_x rho T_1 T_c T_{c+1} T_j T_{j+1} u_c u_j", nonnegative=True
)
A_, B_, E_, F_, G_, W_, DU = sp.symbols("a b e f g w d_u", nonnegative=True)
QPOS = sp.Symbol("q_x", positive=True)


def orders() -> dict[str, dict[sp.Symbol, sp.Expr]]:
    """The cases of (class c of x, step j), each an ordering of the values that class and step fix:

    class ``c >= 1`` means ``T_{c+1} <= rho <= T_c`` (strict on the left by the ``max`` in the class
    map); ``T`` is non-increasing, so ``c < j`` (``c + 1 <= j``) gives ``T_{c+1} >= T_j`` and ``c > j``
    (``c >= j + 1``) gives ``T_c <= T_{j+1}``; ``u`` is non-decreasing (lemma (b)), so ``u_c <= u_j``
    iff ``c <= j`` (equality allowed).  Class 0 has ``rho >= T_1`` (``> T_1``, or ``q(x) = 0``)."""
    t = sp.Symbol("t", nonnegative=True)
    return {
        "class 0 (rho > T_1)": {
            TJ1: t, TJ: t + A_, T1: t + A_ + B_, RHO: t + A_ + B_ + E_, UJ: W_,
        },
        "class 1 <= c < j": {
            TJ1: t, TJ: t + A_, TC1: t + A_ + B_, RHO: t + A_ + B_ + E_, TC: t + A_ + B_ + E_ + F_,
            T1: t + A_ + B_ + E_ + F_ + G_, UC: W_, UJ: W_ + DU,
        },
        "class c = j": {TJ1: t, RHO: t + E_, TJ: t + E_ + F_, T1: t + E_ + F_ + G_, UJ: W_},
        "class c > j": {
            RHO: t, TC: t + F_, TJ1: t + F_ + B_, TJ: t + F_ + B_ + A_, T1: t + F_ + B_ + A_ + G_,
            UJ: W_, UC: W_ + DU,
        },
    }


# Each case's ordering, largest first (the chain its parametrisation runs through, step by step).
ORDERINGS: dict[str, tuple[tuple[sp.Symbol, ...], ...]] = {
    "class 0 (rho > T_1)": ((RHO, T1, TJ, TJ1),),
    "class 1 <= c < j": ((T1, TC, RHO, TC1, TJ, TJ1), (UJ, UC)),
    "class c = j": ((T1, TJ, RHO, TJ1),),
    "class c > j": ((T1, TJ, TJ1, TC, RHO), (UC, UJ)),
}


def realises(name: str) -> bool:
    """The parametrisation of case ``name`` puts its values in its ordering (every consecutive
    difference is a sum of non-negative symbols)."""
    case = orders()[name]
    return all(
        nonnegative(sp.sympify(a).subs(case) - sp.sympify(b).subs(case))
        for chain in ORDERINGS[name]
        for a, b in zip(chain, chain[1:])
    )


# The certificate's mu on each case's class (0 on class 0, u_c on class c).
CERTIFICATE_MU: dict[str, sp.Expr] = {
    "class 0 (rho > T_1)": sp.Integer(0),
    "class 1 <= c < j": UC,
    "class c = j": UJ,
    "class c > j": UC,
}


def slackness_lemmas(mu_of_class: Mapping[str, sp.Expr] = CERTIFICATE_MU) -> dict[str, bool]:
    """(c) For the tight schedule (``R_j = T_j - T_{j+1}``) and the certificate (``mu = 0`` on class 0,
    ``u_c`` on class ``c``, ``lambda_j = (u_j - mu)+``), with the schedule's mass
    ``m_j(x) = min(p, T_j q) - min(p, T_{j+1} q)``, in every case of ``orders``:

    - the recursion's term: ``min(u_j, mu(x))`` is ``0`` on class 0, ``u_c`` on class ``c < j`` and ``u_j``
      on class ``c >= j`` (so ``sum_x q min(u_j, mu) = S_j + u_j Q_j``, the form lemma (b) solves);
    - (1) ``m_j(x) (row(j, x) - 1) = m_j(x) (mu(x) - u_j)+ = 0``;
    - (2) ``lambda_j(x) (R_j q(x) - m_j(x)) = 0``;
    - (3) ``mu(x) (p(x) - sum_j m_j(x)) = mu(x) (p(x) - min(p(x), T_1 q(x))) = 0`` (the sum telescopes,
      Theorem ``resispec.telescoping``).

    A token with ``q(x) = 0`` is in class 0 and has ``m_j(x) = 0 = R_j q(x)``, also checked. And
    ``Q_k > 0`` (``U`` divides by it): ``h(T_k) = sum_x (T_k q - p)+ = z > 0`` needs a token with a
    positive term, and every token with ``p >= T_k q`` has term 0; so some token has ``q > 0`` and ratio
    ``< T_k``, i.e. class ``k``."""
    results: dict[str, bool] = {}
    mins = {"class 0 (rho > T_1)": 0, "class 1 <= c < j": UC, "class c = j": UJ, "class c > j": UJ}
    for name, case in orders().items():
        mu = mu_of_class[name]
        p = RHO * QPOS
        m_j = sp.Min(p, TJ * QPOS) - sp.Min(p, TJ1 * QPOS)
        lam = sp.Max(UJ - mu, 0)
        products = {
            "min(u_j, mu)": sp.Min(UJ, mu) - mins[name],
            "(1) m_j (mu - u_j)+": m_j * sp.Max(mu - UJ, 0),
            "(2) lambda_j (R_j q - m_j)": lam * ((TJ - TJ1) * QPOS - m_j),
            "(3) mu (p - min(p, T_1 q))": mu * (p - sp.Min(p, T1 * QPOS)),
        }
        results[f"(c) {name}: the parametrisation realises the ordering"] = realises(name)
        for what, expr in products.items():
            results[f"(c) {name}: {what}"] = by_cases(expr, [case])
    zero_q = sp.Min(PX, TJ * 0) - sp.Min(PX, TJ1 * 0)
    results["(c) q(x) = 0: m_j = R_j q = 0"] = vanishes(zero_q)
    results["(c) Q_k > 0: p >= T_k q gives (T_k q - p)+ = 0"] = by_cases(
        sp.Max(TJ * QPOS - RHO * QPOS, 0), [{RHO: TJ + E_}]
    )
    return results


# --- (l): the Lagrangian identity, by induction on k -------------------------------------------------

_i, _j, _k = sp.symbols("i j k", integer=True, positive=True)
LAM, MASS = sp.Function("Lambda"), sp.Function("M")  # Lambda_j = sum_x q lambda_j, M_j = sum_x m_j
LM, MUM = sp.Function("LM"), sp.Function("MuM")  # sum_x lambda_j m_j, sum_x mu m_j
PMU = sp.Symbol("P_mu")  # sum_x p mu


def _peel(s: Sum) -> sp.Expr:
    """``sum_{v=a}^{n+1} f(v) = sum_{v=a}^{n} f(v) + f(n+1)`` (the definition of a finite sum)."""
    (v, a, b), = s.limits
    return Sum(s.function, (v, a, b - 1)) + s.function.subs(v, b)


def exchange(n: sp.Expr) -> sp.Expr:
    """``E(n) = sum_{j<=n} Lambda_j sum_{i<j} M_i - sum_{i<=n} M_i sum_{j=i+1}^{n} Lambda_j`` (zero: the
    same triangle summed in two orders)."""
    return Sum(LAM(_j) * Sum(MASS(_i), (_i, 1, _j - 1)), (_j, 1, n)) - Sum(
        MASS(_i) * Sum(LAM(_j), (_j, _i + 1, n)), (_i, 1, n)
    )


def lagrangian_lemmas() -> dict[str, bool]:
    """(l) With ``R_j = 1 - sum_{i<j} M_i``, dual objective ``D = sum_j Lambda_j + sum_x p mu`` and primal
    objective ``P = sum_j M_j``, the complementary products sum to
    ``sum_j [R_j Lambda_j - sum_x lambda_j m_j] + [sum_x p mu - sum_j sum_x mu m_j]
    + sum_j [sum_x lambda_j m_j + M_j sum_{i>j} Lambda_i + sum_x mu m_j - M_j]``
    (capacity, budget, dual rows; ``sum_x m_j(x) row(j, x) = sum_x lambda_j m_j + M_j sum_{i>j} Lambda_i
    + sum_x mu m_j``), and ``D - P - products = E(k)``; ``E(1) = 0`` and ``E(k+1) - E(k) = 0`` (peel the
    last term of each sum, then linearity), so ``D - P`` = the products for every ``k``."""
    k = _k
    R = lambda j: 1 - Sum(MASS(_i), (_i, 1, j - 1))  # noqa: E731 -- the primal reach
    products = (
        Sum(R(_j) * LAM(_j) - LM(_j), (_j, 1, k))
        + (PMU - Sum(MUM(_j), (_j, 1, k)))
        + Sum(LM(_j) + MUM(_j) - MASS(_j), (_j, 1, k))
        + Sum(MASS(_i) * Sum(LAM(_j), (_j, _i + 1, k)), (_i, 1, k))
    )
    dual, primal = Sum(LAM(_j), (_j, 1, k)) + PMU, Sum(MASS(_j), (_j, 1, k))
    gap = sp.simplify(sp.expand(dual - primal - products - exchange(k)).doit())
    triangle = lambda n: Sum(LAM(_j) * Sum(MASS(_i), (_i, 1, _j - 1)), (_j, 1, n))  # noqa: E731
    step_lhs = _peel(triangle(k + 1)) - triangle(k)
    outer = _peel(Sum(MASS(_i) * Sum(LAM(_j), (_j, _i + 1, k + 1)), (_i, 1, k + 1)))
    outer = outer.replace(
        lambda s: isinstance(s, Sum) and s.limits[0] == (_j, _i + 1, k + 1), _peel
    ).subs(Sum(LAM(_j), (_j, k + 2, k + 1)), 0)
    step_rhs = outer - Sum(MASS(_i) * Sum(LAM(_j), (_j, _i + 1, k)), (_i, 1, k))
    return {
        "(l) D - P - products = E(k)": gap == 0,
        "(l) base E(1) = 0": vanishes(exchange(1).doit()),
        "(l) step E(k+1) - E(k) = 0": sp.simplify(sp.expand(step_lhs - step_rhs)) == 0,
    }
