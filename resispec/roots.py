"""Bracketing of monotone scalar predicates, vectorised: a grid of points per round.

SpecTr's ``rho*`` is the boundary of a monotone predicate on an interval (the resispec fixed point
is not bracketed: ``resispec.shaping`` solves it by Newton's method on its piecewise-linear map). Each
round evaluates the predicate on ``grid + 1`` evenly spaced points at once (one
vectorised call) and keeps the cell where it switches, shrinking the bracket ``grid``-fold per round.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

GRID = 32
"""Cells per refinement round."""


def refine_bracket(holds: Callable[[np.ndarray], np.ndarray], lo: float, hi: float,
                   grid: int = GRID) -> tuple[float, float]:
    """One round: ``holds`` is True on ``[lo, x*]`` and False on ``(x*, hi]`` (vectorised over x).

    Returns the grid cell ``(lo', hi')`` with ``holds(lo')`` True and ``holds(hi')`` False (``hi'``
    may equal ``hi`` unevaluated when the predicate holds on the whole grid up to ``hi``).
    """
    points = np.linspace(lo, hi, grid + 1)
    inside = np.asarray(holds(points), dtype=bool)
    last = int(np.flatnonzero(inside)[-1]) if inside.any() else 0
    if last == grid:
        return float(points[-1]), float(points[-1])
    return float(points[last]), float(points[last + 1])


def bracket_boundary(holds: Callable[[np.ndarray], np.ndarray], lo: float, hi: float,
                     rounds: int = 12, grid: int = GRID) -> tuple[float, float]:
    """Refine until the bracket stops shrinking (machine precision) or ``rounds`` are spent."""
    for _ in range(rounds):
        new_lo, new_hi = refine_bracket(holds, lo, hi, grid)
        if (new_lo, new_hi) == (lo, hi) or new_lo == new_hi:
            return new_lo, new_hi
        lo, hi = new_lo, new_hi
    return lo, hi
