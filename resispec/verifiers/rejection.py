"""One step of recursive rejection sampling, shared by rrs, rrs_wor, resispec_wor and their biased variants.

Against the current target ``r`` and the proposal ``s`` the candidate x came from: accept x with
probability ``a = min(1, r(x)/s(x) + slack)`` (``slack = 0`` for the exact rule); on rejection the
next target is ``norm((r - s)+)``. That residual has mass ``TV(r, s) > 0`` whenever a rejection is
possible in exact arithmetic; if rounding leaves it empty (``r == s`` up to rounding, or masses that
underflow), the next target stays ``r`` (``resispec.residual``: the law then errs by at most the lost
mass, and a token outside ``r``'s support is never accepted for lack of a residual).

Written once over rows (the array API: NumPy or torch): ``r``, ``s`` (B, V), x (B,), ``a`` (B,). Where a
rejection is impossible (``r(x) >= s(x)`` or ``a >= 1``) ``a = 1``: that row accepts for sure (u < 1),
so its next target is never used. A rule yields ``a`` before it asks for the next target, so a row
decided at this step costs no residual on NumPy at B = 1.
"""

from __future__ import annotations

from resispec.rows import Array, namespace, positive_part_, value_at


def rejection_acceptance(target: Array, proposal: Array, candidate: Array, slack: Array | float = 0.0) -> Array:
    """``a = min(1, r(x)/s(x) + slack)`` per row, exactly 1 where ``r(x) >= s(x)`` (B,)."""
    xp = namespace(target, proposal)
    target_x, proposal_x = value_at(target, candidate), value_at(proposal, candidate)
    rejectable = target_x < proposal_x  # divide only there: no overflow or 0/0 in the rows that accept
    acceptance = xp.minimum(target_x / xp.where(rejectable, proposal_x, 1.0) + slack, 1.0)
    return xp.where(rejectable & ~(acceptance >= 1.0), acceptance, 1.0)


def rejection_residual(target: Array, proposal: Array) -> Array:
    """The next target ``norm((r - s)+)`` per row (B, V); ``r`` itself where rounding left it no mass."""
    xp = namespace(target, proposal)
    residual = positive_part_(target - proposal)
    mass = xp.sum(residual, axis=-1, keepdims=True)
    has_mass = mass > 0
    residual /= xp.where(has_mass, mass, 1.0)
    return xp.where(has_mass, residual, target)


def rejection_step(target: Array, proposal: Array, candidate: Array,
                   slack: Array | float = 0.0) -> tuple[Array, Array]:
    """``(a (B,), next_target (B, V))`` for one step of every row."""
    return rejection_acceptance(target, proposal, candidate, slack), rejection_residual(target, proposal)
