"""The batched torch verifier contract: torch port of ``resispec.verifiers.base``.

A ``TorchVerifier`` verifies B nodes at once. Shapes: target ``p`` and draft ``q`` (B, V), any
floating dtype (float32 from a model), cast to float64 and validated as in NumPy; candidates (B, k)
integer ids; uniforms ``u`` (B, uniforms_needed(k)) float64, k + 1 for a sequential verifier (a port
of a verifier that needs more overrides ``uniforms_needed``, as its twin does). ``verify`` returns
``(tokens (B,), index (B,))`` long, ``index`` = the accepted candidate position or -1 (final
residual). Everything runs on the inputs' device (CPU or CUDA).

Parity with the NumPy twin (``numpy_twin``, whose ``name``, ``drafting``, ``claims_exact`` and
``max_k`` the port takes over): the same randomness convention, decision for decision given the same
uniforms. ``u[:, i]`` decides candidate i (accept iff ``u[:, i] < a_i``, computed in float64 by the
same formulas), ``u[:, k]`` draws the final residual by inverse CDF over token ids ascending, and the
twin's fallback holds (``resispec.residual``, shared): a candidate with ``p(x) = 0`` is never
accepted, the residual is restricted to p's support, and p itself is drawn from where it has no mass
left. Only sums
are taken in another order, so the two can differ only where a uniform lies within rounding of a
threshold.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Generator
from typing import Any, ClassVar

import torch

from engine.verifiers.drafting import TORCH_DRAFTING_SCHEMES, TorchDraftingScheme
from engine.verifiers.validation import (
    as_candidate_batch,
    as_distributions,
    as_pair,
    as_uniform_batch,
    same_device,
)
from resispec.validation import as_count
from resispec.verifiers.base import Verifier, row_decisions

TorchStepGenerator = Generator[torch.Tensor, torch.Tensor | None, torch.Tensor]
"""Yields ``a_i`` (B,) for every node, then returns the final residual weights (B, V), unnormalised
and non-negative. Each resume receives the nodes still undecided after the step just yielded (bool
(B,): every candidate so far rejected), or None (treat every node as undecided), so a step may skip
the work of decided nodes (resispec_wor: its next plan). The rows of a decided node (or of one that
accepts with certainty, ``a_i = 1``) are never used and may hold anything, NaN included."""


class TorchVerifier(ABC):
    """Batched twin of the NumPy verifier ``numpy_twin`` (attributes taken from it)."""

    numpy_twin: ClassVar[type[Verifier]]
    name: ClassVar[str]
    drafting: ClassVar[str]
    claims_exact: ClassVar[bool]
    max_k: ClassVar[int | None]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        twin = cls.__dict__.get("numpy_twin")
        if twin is not None:
            cls.name, cls.drafting, cls.claims_exact, cls.max_k = (
                twin.name, twin.drafting, twin.claims_exact, twin.max_k)

    @property
    def scheme(self) -> TorchDraftingScheme:
        """The batched drafting scheme named by ``drafting``."""
        return TORCH_DRAFTING_SCHEMES[self.drafting]

    def uniforms_needed(self, k: int) -> int:
        """How many uniforms one node's verification of k candidates consumes (k + 1 unless overridden)."""
        return as_count(k) + 1

    __repr__ = Verifier.__repr__

    # --- public contract: validate at the boundary, then delegate -------------------------------

    def draft(self, q: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
        """(B, k) long candidate ids drawn from each row of ``q`` (B, V) by the drafting rule."""
        q64 = as_distributions(q, "q (draft)")
        k = self._check_count(q64, k)
        _check_generator(generator, q64.device)
        return self.scheme.draft(q64, k, generator)

    def verify(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor,
               u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(tokens (B,), index (B,))`` emitted for the candidates (B, k) and uniforms (B, uniforms_needed(k))."""
        p64, q64, ids = self._validated(p, q, candidates)
        same_device(u, "u", p64.device)
        uniforms = as_uniform_batch(u, ids.shape[0], self.uniforms_needed(ids.shape[1]))
        return self._decide(p64, q64, ids, uniforms, self._prepare(p64, q64, ids.shape[1]))

    def verify_with(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor,
                    generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``verify`` with uniforms drawn from ``generator`` (on the inputs' device)."""
        p64, q64, ids = self._validated(p, q, candidates)
        _check_generator(generator, p64.device)
        batch, k = ids.shape
        u = torch.rand((batch, self.uniforms_needed(k)), dtype=torch.float64, device=p64.device,
                       generator=generator)
        return self._decide(p64, q64, ids, u, self._prepare(p64, q64, k))

    def _validated(self, p: torch.Tensor, q: torch.Tensor,
                   candidates: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        p64, q64 = as_pair(p, q)
        same_device(candidates, "candidates", p64.device)
        ids = as_candidate_batch(candidates, p64.shape[0], p64.shape[1])
        self._check_count(q64, ids.shape[1])
        self.scheme.check_candidates(q64, ids)
        return p64, q64, ids

    def _check_count(self, q: torch.Tensor, k: int) -> int:
        k = as_count(k)
        if self.max_k is not None and k > self.max_k:
            self.numpy_twin()._check_count(q[0].cpu().numpy(), k)  # raises the NumPy "k: ..." error
        self.scheme.check_count(q, k)
        return k

    # --- hooks for concrete verifiers ------------------------------------------------------------

    def _prepare(self, p: torch.Tensor, q: torch.Tensor, k: int) -> Any:
        """Per-node work shared by the k steps (schedules, sorted profiles), batched; none by default."""
        return None

    @abstractmethod
    def _decide(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor, u: torch.Tensor,
                plan: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """``(tokens, index)`` for validated float64 ``p``, ``q`` (B, V), candidates and uniforms."""


class SequentialTorchVerifier(TorchVerifier):
    """Candidates examined one step at a time for all B nodes together, then the final residual: the
    core's decision loop over rows (``resispec.verifiers.base.row_decisions``) run on the step generator."""

    @abstractmethod
    def _steps(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor, plan: Any) -> TorchStepGenerator:
        """Acceptance probabilities step by step, then the final residual (see ``TorchStepGenerator``)."""

    def _decide(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor, u: torch.Tensor,
                plan: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return row_decisions(self._steps(p, q, candidates, plan), p, candidates, u)


def _check_generator(generator: torch.Generator, device: torch.device) -> None:
    """``ValueError`` unless ``generator`` is a ``torch.Generator`` on the inputs' device type."""
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator: expected a torch.Generator, got {type(generator).__name__}")
    if torch.device(generator.device).type != device.type:
        raise ValueError(f"generator: on device {generator.device}, but the inputs are on {device}")
