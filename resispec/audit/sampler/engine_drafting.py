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
  ``(B, gamma + 1, V)`` (the bonus row last). Rows in the contract's arrays, dtype and inputs;
- tree:  ``fn(target, draft, rows, branching) -> (out (B, D + 1), paths (B, L, D))``: the drafted tree as the
  contract's paths (``L = prod(branching)``, slot order); ``draft(prefix)`` as for a chain, one call per node
  (``0 <= t < D``), each node's ``branching[t]`` children drawn from that row by the declared scheme (``engine``:
  i.i.d., ``engine-wor``: without replacement); ``target(paths)`` takes ``(B, L, D)`` paths and returns the raw
  target rows along each ``(B, L, D + 1, V)``.

The audit rebuilds the rows along the returned drafts (``replay_chain``, ``replay_tree``), checks that every draft
has q > 0 (``drafts_in_support``; a tree also that its paths agree on shared nodes and its siblings could come from
the declared scheme), and tests the emitted tokens as for drafts of its own, plus the drafts' own law against q (a
tree: its first path, whose every child is a first draw from q under either scheme, and the root's children as a
tuple, i.i.d. or without replacement).

Requests (``positions`` declared, with ``seeds`` or ``generators``): the seeded rows are requests of a pool
(``RequestPool``) reused across calls, each at its next position (``positions``: the row's first token position;
a chain or tree round advances it by its depth + 1): a sampler that keys its noise by the seed alone repeats it
round after round, which the batch groups "first round of a request" and "later rounds of a request" separate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from resispec.audit.sampler.contract import SamplerContract, as_inputs
from resispec.audit.sampler.drafting import (
    DraftedRows,
    draft_chain,
    draft_tree,
    path_slots,
    stack_rows,
    tree_nodes,
)
from resispec.audit.sampler.models import MODEL_VOCAB, ChainModel
from resispec.drafting import DraftingScheme

REQUESTS = 512
"""Requests in the pool: more than the largest batch (``batches.BATCH_SIZES``), so a batch holds a request once."""

DRAFT_VIOLATION = "draft not drawn from q (id out of range or q = 0)"
TREE_VIOLATION = "paths not one tree (paths through a node disagree) or siblings the declared scheme cannot draw"


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
    """The draft and target of one call's rows, as a chain or tree sampler with engine drafting is handed them.

    ``models[b]`` is row b's model, ``offsets[b]`` its logit offset (``contract.as_inputs``)."""

    def __init__(self, models: list[ChainModel], contract: SamplerContract, offsets: np.ndarray) -> None:
        self.models, self.contract, self.offsets = models, contract, offsets

    def _ids(self, ids: Any, name: str, shapes: list[tuple[int, ...]]) -> np.ndarray:
        values = np.asarray(ids.cpu().numpy() if hasattr(ids, "cpu") else ids)
        outside = values.dtype.kind in "iu" and ((values < 0) | (values >= MODEL_VOCAB)).any()
        if values.shape not in shapes or values.dtype.kind not in "iu" or outside:
            raise ValueError(f"{name}: expected token ids in [0, {MODEL_VOCAB}) of shape "
                             f"{' or '.join(map(str, shapes))}, got {values.dtype} of shape {values.shape}")
        return values

    def draft(self, prefix: Any) -> Any:
        """Raw draft rows (B, V) after each row's drafts ``prefix`` (B, t), ``0 <= t <`` the depth."""
        ids = self._ids(prefix, "draft", [(len(self.models), t) for t in range(self.contract.depth)])
        rows = np.stack([model.raw(tuple(int(x) for x in ids[b]))[1] for b, model in enumerate(self.models)])
        return as_inputs(rows, self.contract, self.offsets, "q")

    def target(self, drafts: Any) -> Any:
        """Raw target rows along each row's ``drafts``, the bonus row last: chain (B, gamma) -> (B, gamma + 1, V),
        tree paths (B, L, D) -> (B, L, D + 1, V)."""
        contract, count = self.contract, len(self.models)
        shape = (count, contract.gamma) if contract.level == "chain" else (count, contract.paths, contract.depth)
        ids = self._ids(drafts, "target", [shape]).reshape(count, -1, shape[-1])
        rows = np.stack([np.stack([np.stack([model.raw(tuple(int(x) for x in path[:t]))[0]
                                             for t in range(shape[-1] + 1)]) for path in ids[b]])
                         for b, model in enumerate(self.models)])
        return as_inputs(rows.reshape(*shape[:-1], shape[-1] + 1, MODEL_VOCAB), contract, self.offsets)


def engine_arguments(rows: DraftedRows, contract: SamplerContract, offsets: np.ndarray,
                     models: list[ChainModel] | None) -> tuple[tuple, list[tuple[int, ...]]]:
    """The positional arguments of one engine-drafting call and the shapes of its two outputs (module doc)."""
    count = rows.tokens.shape[0]
    if contract.level == "node":
        arguments = (as_inputs(rows.raw_p, contract, offsets), as_inputs(rows.raw_q, contract, offsets, "q"),
                     contract.k)
        return arguments, [(count,), (count, contract.k)]
    chain = ChainModels([models[c] for c in rows.context], contract, offsets)
    if contract.level == "tree":
        return ((chain.target, chain.draft, count, contract.branching),
                [(count, contract.depth + 1), (count, contract.paths, contract.depth)])
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


def replay_tree(rows: DraftedRows, paths: np.ndarray, models: list[ChainModel], branching: tuple[int, ...],
                scheme: DraftingScheme) -> tuple[DraftedRows, np.ndarray, np.ndarray]:
    """The rows along the sampler's own ``paths`` (B, L, D) (as ``drafting.draft_tree`` builds them), (B,) whether
    each row's drafts are in the processed draft's support, and (B,) whether its paths are one tree whose siblings
    ``scheme`` could draw (``TREE_VIOLATION``); each node's children are read from the first path through each."""
    nodes = tree_nodes(branching)
    first = {prefix: path for prefix, path in nodes}
    slots = path_slots(branching)
    parts, in_support, tree = [], np.zeros(paths.shape[0], dtype=bool), np.zeros(paths.shape[0], dtype=bool)
    for b, context in enumerate(rows.context):
        model, ids = models[context], np.clip(paths[b], 0, MODEL_VOCAB - 1)
        children = [ids[[first[(*prefix, j)] for j in range(branching[len(prefix)])], len(prefix)]
                    for prefix, _ in nodes if len(prefix) < len(branching)]
        replayed = iter(children)
        tokens, raw_p, raw_q, p = draft_tree(model, branching, lambda p, q, k, where: next(replayed))
        q = np.stack([[model.draft(tuple(path[:d].tolist())) for d in range(len(branching))] for path in tokens])
        in_support[b] = drafts_in_support(paths[b].reshape(1, -1), q.reshape(1, -1, MODEL_VOCAB))[0]
        consistent = all(ids[path, d] == ids[first[tuple(slots[path, :d + 1])], d]
                         for path in range(slots.shape[0]) for d in range(len(branching)))
        drawable = not any(scheme.impossible_rows(model.draft(tuple(tokens[path, :len(prefix)].tolist())),
                                                  child[None])[0]
                           for (prefix, path), child in zip(nodes, children))
        tree[b] = consistent and drawable
        parts.append(DraftedRows(raw_p[None], raw_q[None], p[None], tokens[None], rows.context[b:b + 1],
                                 rows.lengths[b:b + 1]))
    return stack_rows(parts), in_support, tree
