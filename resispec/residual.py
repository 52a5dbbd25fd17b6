"""The final-residual fallback shared by every verifier: never emit a token the target forbids.

A verifier's final residual ``w`` (unnormalised, >= 0; a row per node, NumPy or torch) is, in exact
arithmetic, supported inside the target's support ``{p > 0}`` and has positive mass whenever the final
residual can be reached. In
floating point, rounding can break both: ``(r - s)+`` can underflow to all zeros (``r`` and ``s``
equal up to rounding, or masses below 1e-308), and a difference can leave dust on a token with
``p = 0``. ``supported_residual`` restores the invariant: it zeroes ``w`` off ``{p > 0}`` and, if no
mass is left, falls back to ``p`` itself. The emitted law then differs from ``p`` by at most the
mass rounding lost (the exact probability of that branch), and no token with ``p(x) = 0`` is
ever emitted.
"""

from __future__ import annotations

from resispec.rows import Array, namespace


def supported_residual(residual: Array, p: Array) -> Array:
    """``w 1[p > 0]`` per row of the residual weights ``w`` (shape (..., V)), or that row of ``p`` where
    it has no mass."""
    xp = namespace(residual, p)
    supported = xp.where(p > 0, residual, 0.0)
    return xp.where(xp.sum(supported, axis=-1, keepdims=True) > 0, supported, p)


def supported_acceptance(acceptance: Array, p_x: Array) -> Array:
    """Candidates' acceptance probabilities (any shape), 0 where the target forbids the candidate
    (``p(x) = 0``).

    Exact verifiers give ``a(x) = 0`` there by construction; this guard keeps rounding (and NaN from
    ``0/0`` in an underflowed ratio) from ever accepting such a token.
    """
    if isinstance(acceptance, float) and isinstance(p_x, float):  # one candidate (NumPy scalars are floats)
        return acceptance if p_x > 0 and acceptance == acceptance else 0.0
    xp = namespace(acceptance, p_x)
    return xp.where((p_x > 0) & (acceptance == acceptance), acceptance, 0.0)
