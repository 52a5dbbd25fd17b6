"""The torch verifier of a core rule written once over rows: sequential (``BatchedSequentialVerifier``) or
select-then-verify (``SelectThenVerify``).

The core class states the rule for (B, V) rows with the array API; this adapter runs those same methods
on the validated float64 tensors of B nodes, on their device: ``_row_plan`` and ``_row_steps`` under the
batched decision loop of ``SequentialTorchVerifier``, or ``_row_plan`` and ``_row_decide``. No torch twin
of the rule exists.
"""

from __future__ import annotations

from typing import Any

import torch

from engine.verifiers.base import SequentialTorchVerifier, TorchStepGenerator, TorchVerifier
from resispec.verifiers.base import BatchedSequentialVerifier
from resispec.verifiers.select_then_verify import SelectThenVerify


class SharedRuleTorchVerifier(SequentialTorchVerifier):
    """Batched torch verification by the core rule ``numpy_twin`` itself (its ``_row_plan`` and ``_row_steps``)."""

    numpy_twin: type[BatchedSequentialVerifier]

    def __init__(self) -> None:
        self.rule = self.numpy_twin()

    def _prepare(self, p: torch.Tensor, q: torch.Tensor, k: int) -> Any:
        return self.rule._row_plan(p, q, k)

    def _steps(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor, plan: Any) -> TorchStepGenerator:
        return self.rule._row_steps(p, q, candidates, plan)


class SharedSelectionTorchVerifier(TorchVerifier):
    """Batched torch verification by the select-then-verify core rule ``numpy_twin`` itself (its
    ``_row_plan`` and ``_row_decide``, with its uniform layout)."""

    numpy_twin: type[SelectThenVerify]

    def __init__(self) -> None:
        self.rule = self.numpy_twin()

    def uniforms_needed(self, k: int) -> int:
        return self.rule.uniforms_needed(k)

    def _prepare(self, p: torch.Tensor, q: torch.Tensor, k: int) -> Any:
        return self.rule._row_plan(p, q, k)

    def _decide(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor, u: torch.Tensor,
                plan: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return self.rule._row_decide(plan, candidates, u)


def torch_verifier_for(rule: type[BatchedSequentialVerifier] | type[SelectThenVerify]) -> type[TorchVerifier]:
    """The torch verifier class of the core rule ``rule`` (named ``Torch`` + its class name)."""
    base = SharedRuleTorchVerifier if issubclass(rule, BatchedSequentialVerifier) else SharedSelectionTorchVerifier
    return type(f"Torch{rule.__name__}", (base,),
                {"numpy_twin": rule, "__module__": __name__,
                 "__doc__": f"{rule.__name__}'s rule on (B, V) tensors: {(rule.__doc__ or '').splitlines()[0]}"})
