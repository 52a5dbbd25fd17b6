"""One batched step of recursive rejection sampling: torch port of ``resispec.verifiers.rejection``.

Against the current target ``r`` and the proposal ``s`` (both (B, V)) the candidate x (B,) came from:
accept with probability ``a = min(1, r(x)/s(x) + slack)``; on rejection the next target is
``norm((r - s)+)``. Where a rejection is impossible (``r(x) >= s(x)`` or ``a >= 1``) ``a = 1``: that
node accepts at this step for sure (u < 1), so its next target is never used. Where rounding left the
residual without mass, the next target stays ``r`` (as in the NumPy twin).
"""

from __future__ import annotations

import torch


def rejection_step(target: torch.Tensor, proposal: torch.Tensor, candidate: torch.Tensor,
                   slack: torch.Tensor | float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """``(a (B,), next_target (B, V))`` for one step of every node (float64 throughout)."""
    index = candidate[:, None]
    target_x = target.gather(1, index)[:, 0]
    proposal_x = proposal.gather(1, index)[:, 0]
    acceptance = torch.clamp(target_x / proposal_x + slack, max=1.0)
    residual = (target - proposal).clamp_(min=0.0)
    mass = residual.sum(dim=-1, keepdim=True)
    certain = (target_x >= proposal_x) | (acceptance >= 1.0)
    next_target = torch.where(mass > 0, residual.div_(mass), target)
    return torch.where(certain, 1.0, acceptance), next_target
