"""Batched drafting schemes on tensors, after ``resispec.drafting`` (``iid``, ``wor``, ``topk``).

Each scheme draws (B, k) candidate ids from a validated float64 draft batch ``q`` (B, V) with an
explicit ``torch.Generator`` on q's device, and flags the rows whose candidates it could not have
produced (the NumPy scheme of the same name then words the error).

- ``iid``: ``x_i ~ q`` by inverse CDF at float64 uniforms.
- ``wor``: Gumbel-top-k, the k largest ``log q(x) + G_x`` (``G_x = -log E_x``, ``E_x ~ Exp(1)``) in
  descending order, which is successive sampling without replacement; tokens with ``q = 0`` get
  key ``-inf`` and are never drawn (the count check keeps k <= the support).
- ``topk``: the k largest ``q``, in descending ``q``, ties by ascending token id.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import torch

from resispec.drafting import DRAFTING_SCHEMES, DraftingScheme
from resispec.sampling import inverse_cdf_rows
from resispec.validation import as_candidates, raise_for_rows


class TorchDraftingScheme(ABC):
    """The batched form of the NumPy scheme ``DRAFTING_SCHEMES[name]``."""

    name: str
    bounded: bool = True
    """Whether k is limited by the draft's support (False for i.i.d. drafting)."""

    @property
    def reference(self) -> DraftingScheme:
        return DRAFTING_SCHEMES[self.name]

    def check_count(self, q: torch.Tensor, k: int) -> None:
        """``ValueError`` (the NumPy scheme's) if some row of ``q`` cannot supply k candidates."""
        if self.bounded:
            too_few = torch.count_nonzero(q, dim=-1) < k
            raise_for_rows(too_few, lambda row: self.reference.check_count(q[row].cpu().numpy(), k))

    def check_candidates(self, q: torch.Tensor, candidates: torch.Tensor) -> None:
        """``ValueError`` for the first row this scheme could not have produced (shapes already checked)."""
        self.check_count(q, candidates.shape[1])
        vocab = q.shape[1]
        bad = ((candidates < 0) | (candidates >= vocab)).any(dim=-1)
        drafted = q.gather(1, candidates.clamp(0, vocab - 1))
        bad |= (drafted <= 0).any(dim=-1) | self._impossible(q, candidates)
        raise_for_rows(bad, lambda row: self.reference.check_candidates(
            q[row].cpu().numpy(), _numpy_candidates(candidates[row], vocab)))

    def _impossible(self, q: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Rows (bool (B,)) that are impossible for a scheme-specific reason; none by default."""
        return torch.zeros(candidates.shape[0], dtype=torch.bool, device=candidates.device)

    @abstractmethod
    def draft(self, q: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
        """(B, k) long candidate ids, in draw order (``q`` validated, the count checked)."""


def _numpy_candidates(row: torch.Tensor, vocab: int) -> np.ndarray:
    """A candidate row as NumPy, through ``resispec.validation.as_candidates`` (its range message)."""
    return as_candidates(row.cpu().numpy(), vocab)


class IIDDrafting(TorchDraftingScheme):
    """Independent draws with replacement by inverse CDF: ``P(x) = prod_i q(x_i)``."""

    name = "iid"
    bounded = False

    def draft(self, q: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
        u = torch.rand((q.shape[0], k), dtype=torch.float64, device=q.device, generator=generator)
        return inverse_cdf_rows(q, u)


IID_DRAFTING = IIDDrafting()


class WORDrafting(TorchDraftingScheme):
    """Successive sampling without replacement by Gumbel-top-k: ``P(x) = prod_i q_i(x_i)``. One candidate
    is one draw from q, by inverse CDF (one uniform instead of V exponentials)."""

    name = "wor"

    def draft(self, q: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
        if k == 1:
            return IID_DRAFTING.draft(q, k, generator)
        exponential = torch.empty_like(q).exponential_(generator=generator)
        keys = torch.where(q > 0, q.log() - exponential.log(), -torch.inf)
        return torch.topk(keys, k, dim=-1, sorted=True).indices

    def _impossible(self, q: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        ordered = candidates.sort(dim=-1).values
        return (ordered[:, 1:] == ordered[:, :-1]).any(dim=-1)


def top_k_tokens(q: torch.Tensor, k: int) -> torch.Tensor:
    """The k tokens of largest ``q`` per row (B, k), descending ``q``, ties by ascending token id.

    ``resispec.drafting.top_k_tokens`` on tensors, in O(V) per row: every token above the k-th
    largest value is in; the remaining places go to the lowest ids holding exactly that value.
    """
    batch, vocab = q.shape
    kth = torch.topk(q, k, dim=-1).values[:, -1:]
    above = q > kth
    tied = q == kth
    chosen = above | (tied & (tied.cumsum(dim=-1) <= k - above.sum(dim=-1, keepdim=True)))
    slot = torch.where(chosen, chosen.cumsum(dim=-1) - 1, k)  # ascending ids fill slots 0..k-1
    ids = torch.arange(vocab, device=q.device).expand(batch, vocab)
    tokens = torch.empty((batch, k + 1), dtype=torch.long, device=q.device).scatter_(1, slot, ids)[:, :k]
    order = q.gather(1, tokens).sort(dim=-1, descending=True, stable=True).indices
    return tokens.gather(1, order)


class TopKDrafting(TorchDraftingScheme):
    """Deterministic top-k: the k largest ``q`` (ties by token id); that tuple has probability 1."""

    name = "topk"

    def draft(self, q: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
        return top_k_tokens(q, k)

    def _impossible(self, q: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        return (candidates != top_k_tokens(q, candidates.shape[1])).any(dim=-1)


TORCH_DRAFTING_SCHEMES: dict[str, TorchDraftingScheme] = {
    scheme.name: scheme for scheme in (IID_DRAFTING, WORDrafting(), TopKDrafting())
}
