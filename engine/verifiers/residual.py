"""Batched torch port of ``resispec.residual``: never emit a token the target forbids.

``supported_residual`` zeroes each row of the final residual off its target's support ``{p > 0}`` and
falls back to the target row itself where no mass is left (rounding only: the law then errs by at
most the lost mass); ``supported_acceptance`` makes a candidate with ``p(x) = 0`` (or a NaN
acceptance from an underflowed ratio) never accepted.
"""

from __future__ import annotations

import torch


def supported_residual(residual: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """(B, V): ``w 1[p > 0]`` per row, or the row of ``p`` where that has no mass."""
    supported = torch.where(p > 0, residual, 0.0)
    empty = ~(supported.sum(dim=-1, keepdim=True) > 0)
    return torch.where(empty, p, supported)


def supported_acceptance(acceptance: torch.Tensor, p_x: torch.Tensor) -> torch.Tensor:
    """(B,): the acceptance probabilities, 0 where ``p(x) = 0`` or the acceptance is NaN."""
    return torch.where((p_x > 0) & ~torch.isnan(acceptance), acceptance, 0.0)
