"""Bracketing of monotone predicates, one bracket per row, for NumPy and torch: a grid of points per round.

SpecTr's ``rho*`` is the boundary of a monotone predicate on an interval (the resispec fixed point
is not bracketed: ``resispec.verifiers.resispec.plan`` solves it by Newton's method on its piecewise-linear map). Each
row has its own bracket ``[lo, hi]`` of a predicate that holds on ``[lo, x*]`` and fails on
``(x*, hi]``. Every round evaluates the predicate on ``grid + 1`` evenly spaced points per row at once
(``lo + i (hi - lo) / grid``, the last one ``hi``, as ``numpy.linspace`` spaces them) and keeps the
cell where it switches, shrinking the bracket ``grid``-fold; a row stops once its bracket stops
shrinking (machine precision). A fixed number of rounds for all rows: no host sync on a GPU.
"""

from __future__ import annotations

from collections.abc import Callable

from array_api_compat import is_numpy_array

from resispec.rows import Array, gather_rows, namespace

GRID = 32
"""Cells per refinement round."""


def bracket_boundary(holds: Callable[[Array], Array], lo: Array, hi: Array, rounds: int = 12,
                     grid: int = GRID) -> tuple[Array, Array]:
    """Final brackets ``(lo, hi)`` (B,) with ``holds(lo)`` True and ``holds(hi)`` False (or lo == hi).

    ``holds`` maps points (B, grid + 1) to bools of that shape. Where the predicate holds on the whole
    grid up to ``hi`` the bracket closes on ``hi``; where it holds on none of it, on the first cell.
    """
    xp = namespace(lo, hi)
    offsets = xp.arange(grid + 1, dtype=lo.dtype)
    cells = xp.arange(grid + 1)
    done = xp.zeros(lo.shape, dtype=xp.bool)
    host = is_numpy_array(lo)
    for _ in range(rounds):
        points = xp.concat([(offsets[:grid] * ((hi - lo) / grid)[:, None] + lo[:, None]), hi[:, None]], axis=-1)
        last = xp.max(xp.where(holds(points), cells, 0), axis=-1, keepdims=True)
        new_lo = gather_rows(points, last)[:, 0]
        new_hi = gather_rows(points, xp.minimum(last + 1, grid))[:, 0]
        finished = ((new_lo == lo) & (new_hi == hi)) | (new_lo == new_hi)
        lo, hi = xp.where(done, lo, new_lo), xp.where(done, hi, new_hi)
        done = done | finished
        if host and bool(xp.all(done)):  # on the host the check is free; on a device it would sync
            break
    return lo, hi
