"""The torch verifier of a core rule written once over rows (``BatchedSequentialVerifier``).

The core class states the rule for (B, V) rows with the array API (``_row_plan``, ``_row_steps``); this
adapter runs those same two methods on the validated float64 tensors of B nodes, on their device, under
the batched decision loop of ``SequentialTorchVerifier``. No torch twin of the rule exists.
"""

from __future__ import annotations

from typing import Any

import torch

from engine.verifiers.base import SequentialTorchVerifier, TorchStepGenerator
from resispec.verifiers.base import BatchedSequentialVerifier


class SharedRuleTorchVerifier(SequentialTorchVerifier):
    """Batched torch verification by the core rule ``numpy_twin`` itself (its ``_row_plan`` and ``_row_steps``)."""

    numpy_twin: type[BatchedSequentialVerifier]

    def __init__(self) -> None:
        self.rule = self.numpy_twin()

    def _prepare(self, p: torch.Tensor, q: torch.Tensor, k: int) -> Any:
        return self.rule._row_plan(p, q, k)

    def _steps(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor, plan: Any) -> TorchStepGenerator:
        return self.rule._row_steps(p, q, candidates, plan)


def torch_verifier_for(rule: type[BatchedSequentialVerifier]) -> type[SharedRuleTorchVerifier]:
    """The torch verifier class of the core rule ``rule`` (named ``Torch`` + its class name)."""
    return type(f"Torch{rule.__name__}", (SharedRuleTorchVerifier,),
                {"numpy_twin": rule, "__module__": __name__,
                 "__doc__": f"{rule.__name__}'s rule on (B, V) tensors: {(rule.__doc__ or '').splitlines()[0]}"})
