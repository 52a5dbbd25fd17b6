"""The torch adapter of a core rule: ``TorchVerifier(rule)`` runs a core verifier on B nodes at once.

The core states each rule once, for (B, V) rows with the array API: a sequential rule
(``resispec.verifiers.base.BatchedSequentialVerifier``) by ``_row_plan`` and ``_row_steps``, a
select-then-verify rule (``resispec.verifiers.select_then_verify.SelectThenVerify``) by ``_row_plan`` and
``_row_decide``. This adapter validates tensors at the boundary and runs those same methods on the
validated float64 rows; nothing here restates a rule. On CUDA they run on the tensors. On the CPU they
run, by default, on NumPy views of the same memory (``cpu_rows="numpy"``, no copy): a node's plan is
dozens of small array operations, and NumPy's cost per operation is a fraction of eager torch's. One
node of V = 49,152 at k = 2, one thread, AVX2: resispec 12.3 ms as tensors, 4.2 ms as NumPy views; rrs
2.5 ms and 1.5 ms. ``cpu_rows="torch"`` keeps the tensors, so the tests decide the same rows both ways.

Shapes: target ``p`` and draft ``q`` (B, V), any floating dtype (float32 from a model), cast to float64
and validated as in NumPy; candidates (B, k) integer ids; uniforms ``u`` (B, uniforms_needed(k)) float64,
the rule's layout (k + 1 for a sequential rule). ``verify`` returns ``(tokens (B,), index (B,))`` long,
``index`` = the accepted candidate position or -1 (final residual). ``draft_trusted`` and ``verify_trusted``
are the decoding loop's path for rows it made itself (valid by construction): the same results, no checks;
what comes from outside (a user's rows, a log) goes through ``draft`` and ``verify``.

The randomness convention is the core's, decision for decision given the same uniforms: ``u[:, i]``
decides candidate i (accept iff ``u[:, i] < a_i``, in float64 by the same formulas), ``u[:, k]`` draws
the final residual by inverse CDF over token ids ascending, and the fallback of ``resispec.residual``
holds: a candidate with ``p(x) = 0`` is never accepted, the residual is restricted to p's support, and p
itself is drawn from where it has no mass left. Only sums are taken in another order, so the NumPy
reference and the tensors can differ only where a uniform lies within rounding of a threshold.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from resispec.engine.verifiers.drafting import TORCH_DRAFTING_SCHEMES, TorchDraftingScheme
from resispec.engine.verifiers.validation import (
    as_candidate_batch,
    as_distributions,
    as_pair,
    as_uniform_batch,
    renormalized,
    same_device,
)
from resispec.validation import as_count
from resispec.verifiers.base import BatchedSequentialVerifier, Verifier, row_decisions
from resispec.verifiers.select_then_verify import SelectThenVerify

CPU_ROWS = ("numpy", "torch")


class TorchVerifier:
    """The core verifier ``rule`` (an instance) on (B, V) tensors; ``name``, ``drafting``, ``claims_exact``
    and ``max_k`` are the rule's. ``cpu_rows``: what the rule's row methods get for CPU tensors, NumPy
    views of them (default) or the tensors themselves (module docstring); the decisions are the same."""

    def __init__(self, rule: Verifier, cpu_rows: str = "numpy") -> None:
        if not isinstance(rule, (BatchedSequentialVerifier, SelectThenVerify)):
            raise ValueError(f"rule: {type(rule).__name__} is not written over rows (a BatchedSequentialVerifier "
                             "or a SelectThenVerify), so it cannot run on tensors")
        if cpu_rows not in CPU_ROWS:
            raise ValueError(f"cpu_rows: expected one of {', '.join(CPU_ROWS)}, got {cpu_rows!r}")
        self.rule = rule
        self.cpu_rows = cpu_rows

    name = property(lambda self: self.rule.name)
    drafting = property(lambda self: self.rule.drafting)
    claims_exact = property(lambda self: self.rule.claims_exact)
    max_k = property(lambda self: self.rule.max_k)

    @property
    def scheme(self) -> TorchDraftingScheme:
        """The batched drafting scheme named by ``drafting``."""
        return TORCH_DRAFTING_SCHEMES[self.drafting]

    def uniforms_needed(self, k: int) -> int:
        """How many uniforms one node's verification of k candidates consumes (the rule's layout)."""
        return self.rule.uniforms_needed(k)

    def __repr__(self) -> str:
        return f"TorchVerifier({self.rule!r})"

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
        return self._decide(p64, q64, ids, as_uniform_batch(u, ids.shape[0], self.uniforms_needed(ids.shape[1])))

    def verify_with(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor,
                    generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """``verify`` with uniforms drawn from ``generator`` (on the inputs' device)."""
        p64, q64, ids = self._validated(p, q, candidates)
        _check_generator(generator, p64.device)
        batch, k = ids.shape
        u = torch.rand((batch, self.uniforms_needed(k)), dtype=torch.float64, device=p64.device,
                       generator=generator)
        return self._decide(p64, q64, ids, u)

    def draft_trusted(self, q: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
        """`draft` for rows the engine made itself: ``q`` float64 (B, V) processed softmax rows and ``k`` within
        the scheme's bounds (valid by construction), renormalized as `draft` does (`renormalized`) but not
        revalidated. The same candidates as `draft` for the same generator state."""
        return self.scheme.draft(renormalized(q), k, generator)

    def verify_trusted(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor,
                       u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`verify` for rows, candidates and uniforms the engine made itself (float64 (B, V) processed softmax
        rows, candidates (B, k) long drawn by the scheme from ``q``, uniforms float64 in [0, 1)): renormalized
        as `verify` does, not revalidated; the same decisions as `verify`."""
        return self._decide(renormalized(p), renormalized(q), candidates, u)

    def _decide(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor,
                u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The rule on validated float64 ``p``, ``q`` (B, V), candidates (B, k) and uniforms."""
        if p.device.type == "cpu" and self.cpu_rows == "numpy":
            tokens, index = self._rule_decisions(p.numpy(), q.numpy(), candidates.numpy(), u.numpy())
            return (torch.from_numpy(np.asarray(tokens, dtype=np.int64)),
                    torch.from_numpy(np.asarray(index, dtype=np.int64)))
        return self._rule_decisions(p, q, candidates, u)

    def _rule_decisions(self, p: Any, q: Any, candidates: Any, u: Any) -> tuple[Any, Any]:
        """``(tokens (B,), index (B,))`` of the rule's row methods on rows of one array namespace."""
        plan: Any = self.rule._row_plan(p, q, candidates.shape[1])
        if isinstance(self.rule, SelectThenVerify):
            return self.rule._row_decide(plan, candidates, u)
        return row_decisions(self.rule._row_steps(p, q, candidates, plan), p, candidates, u)

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
            self.rule._check_count(q[0].cpu().numpy(), k)  # raises the NumPy "k: ..." error
        self.scheme.check_count(q, k)
        return k


def _check_generator(generator: torch.Generator, device: torch.device) -> None:
    """``ValueError`` unless ``generator`` is a ``torch.Generator`` on the inputs' device type."""
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator: expected a torch.Generator, got {type(generator).__name__}")
    if torch.device(generator.device).type != device.type:
        raise ValueError(f"generator: on device {generator.device}, but the inputs are on {device}")
