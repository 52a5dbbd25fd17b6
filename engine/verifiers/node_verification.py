"""Drafting and verifying the children of tree nodes with the torch verifiers of the zoo.

The decoding loop asks two things of a verifier: draw each internal node's children from q by the
verifier's drafting rule (batched over a level's nodes), and verify one node's children against p.
Drafting without replacement or top-k needs ``k <= support(q)``; after top-k/top-p processing a node
may have fewer draft tokens than the tree's branching, so such a node gets ``support`` real children
and the remaining child slots repeat the last one as padding, which verification never sees
(``real_children``).

Parity check (optional): on a random fraction of verified nodes the NumPy reference decides the same
node with the same uniforms; every disagreement is counted (expected: none: one rule, summed in another
order only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from resispec.engine.verifiers.base import TorchVerifier
from resispec.verifiers import Verifier


@dataclass
class ParityCounts:
    checked: int = 0
    mismatches: int = 0


class NodeVerifier:
    """A verifier of the zoo applied to tree nodes (on tensors; the NumPy rule itself for parity checks).

    Its inputs are the decoding loop's own: float64 processed softmax rows p and q (M, V), candidates drawn
    from q by `draft`, uniforms from the loop's generator. They are valid by construction, so they are not
    revalidated at every node (`TorchVerifier.draft_trusted` / `verify_trusted`: the same results as the
    validating ``draft`` / ``verify``, which stay the boundary for rows from outside).

    Args:
        rule: the core verifier (``resispec.get_verifier(name)``).
        parity_fraction: probability that a verified node is re-decided by the NumPy reference.
        parity_rng: the generator choosing those nodes, apart from the decisions' uniforms, so that
            turning the check on never changes what is decoded (required when ``parity_fraction > 0``).
    """

    def __init__(self, rule: Verifier, parity_fraction: float = 0.0,
                 parity_rng: np.random.Generator | None = None) -> None:
        if not 0.0 <= parity_fraction <= 1.0:
            raise ValueError(f"parity_fraction: must lie in [0, 1], got {parity_fraction}")
        if parity_fraction and parity_rng is None:
            raise ValueError("parity_rng: a parity check needs its own generator")
        self.verifier = TorchVerifier(rule)
        self.reference = rule
        self.name = rule.name
        self.parity_fraction = parity_fraction
        self.parity_rng = parity_rng
        self.parity = ParityCounts()

    def real_children(self, q: torch.Tensor, k: int) -> torch.Tensor:
        """How many of the k child slots of each node hold real candidates (q (M, V) -> long (M,))."""
        if not self.verifier.scheme.bounded:
            return torch.full(q.shape[:1], k, dtype=torch.long, device=q.device)
        return torch.clamp(torch.count_nonzero(q, dim=-1), max=k)

    def draft(self, q: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
        """Children of M nodes with draft q (float64 (M, V)) -> long (M, k), padded (module doc)."""
        real = self.real_children(q, k)
        if bool((real == k).all()):
            return self.verifier.draft_trusted(q, k, generator)
        rows = []
        for row, count in zip(q, real.tolist()):
            drawn = self.verifier.draft_trusted(row[None], count, generator)[0]
            rows.append(torch.cat([drawn, drawn[-1:].expand(k - count)]))
        return torch.stack(rows)

    def candidates(self, q: torch.Tensor, children: torch.Tensor) -> torch.Tensor:
        """The real candidates among a node's child tokens (children (k,), q (V,)): padding dropped."""
        return children[: int(self.real_children(q[None], children.numel())[0])]

    def verify(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor,
               rng: np.random.Generator) -> tuple[int, int]:
        """``(token, index)`` for one node (p, q (V,), its real candidates (k',)); index = slot or -1."""
        tokens, index = self.verify_batch(p[None], q[None], candidates[None], rng)
        return int(tokens[0]), int(index[0])

    def verify_batch(self, p: torch.Tensor, q: torch.Tensor, candidates: torch.Tensor,
                     rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Decide B nodes at once (p, q (B, V), candidates (B, k)), each with its own uniforms (row b of a
        (B, uniforms_needed(k)) draw); ``(tokens (B,), index (B,))`` on the CPU, index = slot or -1."""
        u = rng.random((candidates.shape[0], self.verifier.uniforms_needed(candidates.shape[1])))
        tokens, index = self.verifier.verify_trusted(p, q, candidates.to(p.device).long(),
                                                     torch.from_numpy(u).to(p.device))
        tokens, index = tokens.cpu(), index.cpu()
        for b in range(candidates.shape[0]):
            if self.parity_fraction and self.parity_rng.random() < self.parity_fraction:
                expected = self.reference.verify(p[b].cpu().numpy(), q[b].cpu().numpy(),
                                                  candidates[b].cpu().numpy(), u[b])
                self.parity.checked += 1
                self.parity.mismatches += expected != (int(tokens[b]), int(index[b]))
        return tokens, index
