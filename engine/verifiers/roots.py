"""Batched bracketing of monotone predicates: torch port of ``resispec.roots.bracket_boundary``.

Each node has its own bracket ``[lo, hi]`` of a predicate that holds on ``[lo, x*]`` and fails on
``(x*, hi]``. Every round evaluates the predicate on ``GRID + 1`` evenly spaced points per node
(``lo + i (hi - lo) / GRID``, the last one ``hi``, as ``numpy.linspace`` spaces them) and keeps the
cell where it switches; a node stops once its bracket stops shrinking (machine precision). A fixed
number of rounds for all nodes: no host sync.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from resispec.roots import GRID


def bracket_boundary(holds: Callable[[torch.Tensor], torch.Tensor], lo: torch.Tensor, hi: torch.Tensor,
                     rounds: int = 12, grid: int = GRID) -> tuple[torch.Tensor, torch.Tensor]:
    """Final brackets ``(lo, hi)`` (B,) with ``holds(lo)`` True and ``holds(hi)`` False (or lo == hi).

    ``holds`` maps points (B, grid + 1) to bools of that shape.
    """
    offsets = torch.arange(grid + 1, dtype=lo.dtype, device=lo.device)
    done = torch.zeros_like(lo, dtype=torch.bool)
    for _ in range(rounds):
        points = offsets * ((hi - lo) / grid)[:, None] + lo[:, None]
        points[:, -1] = hi
        inside = holds(points)
        last = torch.where(inside, offsets.long(), 0).amax(dim=-1, keepdim=True)
        new_lo = points.gather(1, last)[:, 0]
        new_hi = points.gather(1, (last + 1).clamp(max=grid))[:, 0]
        finished = ((new_lo == lo) & (new_hi == hi)) | (new_lo == new_hi)
        lo, hi = torch.where(done, lo, new_lo), torch.where(done, hi, new_hi)
        done |= finished
    return lo, hi
