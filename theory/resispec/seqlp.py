"""The sequential LP of i.i.d. verification and a dual certificate built from the resispec schedule.

Primal (verifiers.md): variables ``m_j(x) >= 0`` (mass step ``j`` accepts at token ``x``),
``m_j(x) <= R_j q(x)`` with ``R_j = 1 - sum_{i<j} sum_y m_i(y)``, ``sum_j m_j(x) <= p(x)``; maximise
``sum_{j,x} m_j(x) = 1 - R_{k+1}``.  Every exact sequential verifier of i.i.d. candidates gives a
feasible point (its candidate at step ``j`` is ``q``-distributed independently of reaching step ``j``,
and it emits each token with total probability ``p``), and every feasible point is realised by the
resispec-style rule ``a_j = m_j / (R_j q)`` with residual ``p - sum_j m_j``.

Dual, with ``lambda_j(x) >= 0`` on the capacity rows and ``mu(x) >= 0`` on the budget rows: minimise
``sum_{j,x} q(x) lambda_j(x) + sum_x p(x) mu(x)`` subject to, for every step ``i`` and token ``y``,
``lambda_i(y) + sum_{j>i} sum_x q(x) lambda_j(x) + mu(y) >= 1``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.optimize import linprog

from resispec.theory.common.exact import Law
from resispec.theory.resispec.schedule import Schedule

Masses = tuple[tuple[Fraction, ...], ...]  # masses[j][x] = m_{j+1}(x)


def schedule_masses(p: Law, q: Law, T: Sequence[Fraction]) -> Masses:
    """Step ``j`` of resispec accepts ``min(p, T_j q) - min(p, T_{j+1} q)`` at each token."""
    T = [*T, Fraction(0)]
    return tuple(
        tuple(min(a, T[j] * b) - min(a, T[j + 1] * b) for a, b in zip(p, q)) for j in range(len(T) - 1)
    )


def objective(masses: Masses) -> Fraction:
    return sum((sum(row, Fraction(0)) for row in masses), Fraction(0))


def primal_problems(p: Law, q: Law, masses: Masses) -> list[str]:
    """Why ``masses`` is not a feasible point of the sequential LP (empty when it is)."""
    problems, reach = [], Fraction(1)
    for j, row in enumerate(masses, start=1):
        for x, m in enumerate(row):
            if m < 0 or m > reach * q[x]:
                problems.append(f"m_{j}({x}) = {m} outside [0, R_{j} q(x)] with R_{j} = {reach}")
        reach -= sum(row, Fraction(0))
    for x in range(len(p)):
        total = sum((row[x] for row in masses), Fraction(0))
        if total > p[x]:
            problems.append(f"sum_j m_j({x}) = {total} > p({x}) = {p[x]}")
    return problems


@dataclass(frozen=True)
class Dual:
    """``lam[j][x] = lambda_{j+1}(x)``, ``mu[x]``."""

    lam: tuple[tuple[Fraction, ...], ...]
    mu: tuple[Fraction, ...]

    def objective(self, p: Law, q: Law) -> Fraction:
        cap = sum((b * l for row in self.lam for b, l in zip(q, row)), Fraction(0))
        return cap + sum((a * m for a, m in zip(p, self.mu)), Fraction(0))


def dual_problems(p: Law, q: Law, dual: Dual) -> list[str]:
    """Why ``dual`` is not dual feasible (empty when it is); checks every row of the dual."""
    problems = [f"negative multiplier {v}" for row in (*dual.lam, dual.mu) for v in row if v < 0]
    k = len(dual.lam)
    Lam = [sum((b * l for b, l in zip(q, row)), Fraction(0)) for row in dual.lam]
    for i in range(k):
        later = sum(Lam[i + 1 :], Fraction(0))
        for y in range(len(p)):
            lhs = dual.lam[i][y] + later + dual.mu[y]
            if lhs < 1:
                problems.append(f"dual row (step {i + 1}, token {y}) = {lhs} < 1")
    return problems


def certificate(p: Law, q: Law, sched: Schedule) -> Dual:
    """The dual solution the schedule determines (closed form; see ``resispec.theory.resispec.resispec``).

    Token ``x`` is in class 0 when ``q(x) = 0`` or ``p(x)/q(x) > T_1``, else in class
    ``c = max{c : p(x) <= T_c q(x)}``.  With ``Q_l`` the draft mass of classes ``>= l`` and ``q_0`` that of
    class 0: ``U_1 = 1``, ``U_j = U_{j-1} + q_0 / (Q_2 ... Q_j)``, ``u_j = U_j / U_k``;
    ``mu(x) = u_{c(x)}`` (0 in class 0) and ``lambda_j(x) = (u_j - mu(x))+``.  When ``z = 0``,
    ``mu = 1`` and ``lambda = 0`` (bound 1).
    """
    k, V = len(sched.T), len(p)
    if sched.z == 0:
        return Dual(tuple((Fraction(0),) * V for _ in range(k)), (Fraction(1),) * V)
    cls = [
        0 if b == 0 or a > sched.T[0] * b else max(c for c in range(1, k + 1) if a <= sched.T[c - 1] * b)
        for a, b in zip(p, q)
    ]
    q0 = sum((b for b, c in zip(q, cls) if c == 0), Fraction(0))
    Q = {l: sum((b for b, c in zip(q, cls) if c >= l), Fraction(0)) for l in range(2, k + 1)}
    U, prod = [Fraction(1)], Fraction(1)
    for j in range(2, k + 1):
        if Q[j] == 0:  # impossible for a tight schedule with z > 0: h(T_j) = z + T_{j+1} > 0
            raise ValueError(f"no draft mass with ratio <= T_{j}: the schedule is not tight")
        prod *= Q[j]
        U.append(U[-1] + q0 / prod)
    u = [Uj / U[-1] for Uj in U]
    mu = tuple(Fraction(0) if c == 0 else u[c - 1] for c in cls)
    lam = tuple(tuple(max(u[j] - m, Fraction(0)) for m in mu) for j in range(k))
    return Dual(lam, mu)


def certificate_problems(p: Law, q: Law, sched: Schedule) -> list[str]:
    """Why the schedule is not certified optimal: its masses must be primal feasible, the certificate
    dual feasible, and the two objectives equal (then both are optimal by weak duality)."""
    masses = schedule_masses(p, q, sched.T)
    try:
        dual = certificate(p, q, sched)
    except ValueError as err:
        return [str(err)]
    problems = primal_problems(p, q, masses) + dual_problems(p, q, dual)
    if objective(masses) != dual.objective(p, q):
        problems.append(f"primal {objective(masses)} != dual {dual.objective(p, q)}")
    return problems


def sequential_lp_float(p: Law, q: Law, k: int) -> float:
    """The sequential LP optimum by HiGHS in floating point (a cross-check of the exact results)."""
    V = len(p)
    rows, rhs = [], []
    for j in range(k):
        for x in range(V):
            row = np.zeros(k * V)
            row[j * V + x] = 1
            for i in range(j):
                row[i * V : (i + 1) * V] += float(q[x])
            rows.append(row)
            rhs.append(float(q[x]))
    for x in range(V):
        row = np.zeros(k * V)
        row[x::V] = 1
        rows.append(row)
        rhs.append(float(p[x]))
    res = linprog(-np.ones(k * V), A_ub=np.array(rows), b_ub=np.array(rhs), bounds=(0, None), method="highs")
    return -res.fun
