"""Engine-owned drafting (``drafting="engine"``): the sampler draws its own drafts with the randomness it owns.

Engines draw the draft tokens and the verification's uniforms from per-request streams keyed by a seed and a token
position (vLLM's model runner keys Philox by seed and offset). A bug that couples two of those draws (the draft's
Gumbel noise reused for the recovery draw; the acceptance uniform reused as the residual's inverse-CDF threshold:
docs/audit_sampler.md, "Worked examples by bug class") keeps acceptance rates normal and cannot be seen while the
audit draws the drafts and hands them over. With engine drafting the sampler drafts:

- node:  ``fn(p (B, V), q (B, V), k) -> (tokens (B,), candidates (B, k))``, the candidates i.i.d. from the
  processed q;
- chain: ``fn(target, draft, rows, gamma) -> (out (B, gamma + 1), drafts (B, gamma))``: ``draft(prefix)`` takes
  each row's drafts so far (``(B, t)`` ids, ``0 <= t < gamma``) and returns the raw draft rows after them
  ``(B, V)``; ``target(drafts)`` takes ``(B, gamma)`` drafts and returns the raw target rows along them
  ``(B, gamma + 1, V)`` (the bonus row last). Rows in the contract's arrays, dtype and inputs.

The audit rebuilds the rows along the returned drafts (``replay_chain``), checks that every draft has q > 0
(``drafts_in_support``), and tests the emitted tokens as for drafts of its own, plus the drafts' own law against q.

Requests (``positions`` declared, with ``seeds`` or ``generators``): the seeded rows are requests of a pool
(``RequestPool``) reused across calls, each at its next position (``positions``: the row's first token position;
a chain round advances it by gamma + 1): a sampler that keys its noise by the seed alone repeats it round after
round, which the batch groups "first round of a request" and "later rounds of a request" separate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from resispec.audit.sampler.contract import SamplerContract, as_inputs
from resispec.audit.sampler.drafting import DraftedRows, draft_chain, stack_rows
from resispec.audit.sampler.models import MODEL_VOCAB, ChainModel

REQUESTS = 512
"""Requests in the pool: more than the largest batch (``batches.BATCH_SIZES``), so a batch holds a request once."""

DRAFT_VIOLATION = "draft not drawn from q (id out of range or q = 0)"


class RequestPool:
    """Seeds reused across calls with advancing positions (module doc); ``step`` positions per round."""

    def __init__(self, rng: np.random.Generator, step: int, size: int = REQUESTS) -> None:
        self.rng, self.step = rng, step
        self.seeds = rng.integers(0, 2**31, size=size)
        self.next = np.zeros(size, dtype=np.int64)

    def assign(self, seeds: list[int | None]) -> tuple[list[int | None], np.ndarray, np.ndarray]:
        """For a batch whose rows are seeded or not (``seeds``): the requests' seeds, each row's position and its
        round of the request (-1 for unseeded rows, whose position is random)."""
        seeded = [row for row, seed in enumerate(seeds) if seed is not None]
        picks = self.rng.choice(self.seeds.size, size=len(seeded), replace=False)
        positions = self.rng.integers(0, 2**20, size=len(seeds))
        rounds = np.full(len(seeds), -1, dtype=np.int64)
        out: list[int | None] = [None] * len(seeds)
        for row, request in zip(seeded, picks):
            out[row], positions[row] = int(self.seeds[request]), self.next[request]
            rounds[row] = self.next[request] // self.step
            self.next[request] += self.step
        return out, positions, rounds


class ChainModels:
    """The draft and target of one call's rows, as a chain sampler with engine drafting is handed them.

    ``models[b]`` is row b's model, ``offsets[b]`` its logit offset (``contract.as_inputs``)."""

    def __init__(self, models: list[ChainModel], contract: SamplerContract, offsets: np.ndarray) -> None:
        self.models, self.contract, self.offsets = models, contract, offsets

    def _ids(self, ids: Any, name: str, columns: range) -> np.ndarray:
        values = np.asarray(ids.cpu().numpy() if hasattr(ids, "cpu") else ids)
        if values.ndim != 2 or values.shape[0] != len(self.models) or values.shape[1] not in columns \
                or values.dtype.kind not in "iu" or ((values < 0) | (values >= MODEL_VOCAB)).any():
            raise ValueError(f"{name}: expected ({len(self.models)}, t) token ids in [0, {MODEL_VOCAB}) with t in "
                             f"[{columns.start}, {columns.stop - 1}], got {values.dtype} of shape {values.shape}")
        return values

    def draft(self, prefix: Any) -> Any:
        """Raw draft rows (B, V) after each row's drafts ``prefix`` (B, t)."""
        ids = self._ids(prefix, "draft", range(self.contract.gamma))
        rows = np.stack([model.raw(tuple(int(x) for x in ids[b]))[1] for b, model in enumerate(self.models)])
        return as_inputs(rows, self.contract, self.offsets, "q")

    def target(self, drafts: Any) -> Any:
        """Raw target rows (B, gamma + 1, V) along each row's ``drafts`` (B, gamma), the bonus row last."""
        ids = self._ids(drafts, "target", range(self.contract.gamma, self.contract.gamma + 1))
        rows = np.stack([np.stack([model.raw(tuple(int(x) for x in ids[b, :t]))[0]
                                   for t in range(ids.shape[1] + 1)]) for b, model in enumerate(self.models)])
        return as_inputs(rows, self.contract, self.offsets)


def engine_arguments(rows: DraftedRows, contract: SamplerContract, offsets: np.ndarray,
                     models: list[ChainModel] | None) -> tuple[tuple, list[tuple[int, ...]]]:
    """The positional arguments of one engine-drafting call and the shapes of its two outputs (module doc)."""
    count = rows.tokens.shape[0]
    if contract.level == "node":
        arguments = (as_inputs(rows.raw_p, contract, offsets), as_inputs(rows.raw_q, contract, offsets, "q"),
                     contract.k)
        return arguments, [(count,), (count, contract.k)]
    chain = ChainModels([models[c] for c in rows.context], contract, offsets)
    return (chain.target, chain.draft, count, contract.gamma), [(count, contract.gamma + 1), (count, contract.gamma)]


def drafts_in_support(drafts: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(B,) whether every draft of a row (``drafts`` (B, D)) is an id with ``q > 0`` at its position (``q``
    (B, D, V) processed draft rows, or (B, V) shared by every position)."""
    inside = (drafts >= 0) & (drafts < q.shape[-1])
    safe = np.where(inside, drafts, 0)
    rows = q if q.ndim == 3 else np.broadcast_to(q[:, None], (*drafts.shape, q.shape[-1]))
    mass = np.take_along_axis(rows, safe[..., None], axis=-1)[..., 0]
    return (inside & (mass > 0)).all(axis=1)


def replay_chain(rows: DraftedRows, drafts: np.ndarray, models: list[ChainModel],
                 gamma: int) -> tuple[DraftedRows, np.ndarray]:
    """The rows along the sampler's own ``drafts`` (B, gamma) (as ``drafting.draft_chain`` builds them) and (B,)
    whether each row's drafts are in the processed draft's support; ids out of range are replayed as 0."""
    parts, valid = [], np.zeros(drafts.shape[0], dtype=bool)
    for b, context in enumerate(rows.context):
        model, replayed = models[context], iter(np.clip(drafts[b], 0, MODEL_VOCAB - 1).tolist())
        tokens, raw_p, raw_q, p = draft_chain(model, gamma, gamma, lambda p, q, k, where: np.array([next(replayed)]))
        q = np.stack([model.draft(tuple(tokens[:t].tolist())) for t in range(gamma)])
        valid[b] = drafts_in_support(drafts[b:b + 1], q[None])[0]
        parts.append(DraftedRows(raw_p[None], raw_q[None], p[None], drafts[b:b + 1], rows.context[b:b + 1],
                                 rows.lengths[b:b + 1]))
    return stack_rows(parts), valid
