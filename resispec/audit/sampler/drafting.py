"""Drafting for the audit: candidates, chains and trees drawn by the claimed rule from the processed draft.

- node: ``k`` candidates from ``q`` of the context by the scheme (``resispec.drafting``: iid, wor, topk);
- chain: ``drafts[i] ~ q(. | drafts[:i])`` by the scheme at one candidate per position (topk: the draft's
  argmax, a deterministic draft);
- tree: each node's ``branching[d]`` children drawn by the scheme from ``q`` at the node, laid out as the
  contract's root-to-leaf paths (``resispec.audit.sampler.contract``).

A *chooser* ``choose(p, q, k, where) -> ids (k,)`` picks each node's children: ``scheme_chooser`` draws them
(the statistical audit), ``resispec.audit.sampler.probe_rows`` picks forbidden tokens first (the edge probes).
Each function also returns the rows handed to the sampler: the raw target and draft along the drafted tokens
and the processed target (the law the output is checked against).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from resispec.audit.sampler.models import MODEL_VOCAB, ChainModel, uniform_row
from resispec.drafting import DraftingScheme

Chooser = Callable[[np.ndarray, np.ndarray, int, str], np.ndarray]


@dataclass
class DraftedRows:
    """The rows of one level, each a drafted context, stacked: ``raw_p`` / ``raw_q`` as handed to the sampler,
    ``p`` the processed target along the same positions, ``tokens`` the drafted ids (node (N, k), chain
    (N, gamma) with -1 past ``lengths``, tree (N, L, D)), ``context`` each row's context index, ``lengths``
    each row's draft length (node 0)."""

    raw_p: np.ndarray
    raw_q: np.ndarray
    p: np.ndarray
    tokens: np.ndarray
    context: np.ndarray
    lengths: np.ndarray

    def take(self, rows: np.ndarray) -> DraftedRows:
        return DraftedRows(*(getattr(self, name)[rows] for name in ROW_FIELDS))

    def put(self, rows: np.ndarray, values: DraftedRows) -> None:
        """Overwrite ``rows`` with ``values`` (the rows along a sampler's own drafts, ``engine_drafting``)."""
        for name in ROW_FIELDS:
            getattr(self, name)[rows] = getattr(values, name)


ROW_FIELDS = ("raw_p", "raw_q", "p", "tokens", "context", "lengths")


def stack_rows(parts: list[DraftedRows]) -> DraftedRows:
    return DraftedRows(*(np.concatenate([getattr(part, name) for part in parts]) for name in ROW_FIELDS))


def scheme_chooser(scheme: DraftingScheme, rng: np.random.Generator) -> Chooser:
    """Children drawn from q by the scheme; a count the scheme cannot serve is a ValueError naming where."""
    def choose(p: np.ndarray, q: np.ndarray, k: int, where: str) -> np.ndarray:
        try:
            return scheme.draft(q, k, rng)
        except ValueError as error:
            raise ValueError(f"{error} (drafting {where})") from None
    return choose


def draft_chain(model: ChainModel, gamma: int, length: int, choose: Chooser) -> tuple[np.ndarray, ...]:
    """One chain of ``length`` drafts: ``(drafts (gamma,), raw p (gamma + 1, V), raw q (gamma, V), p (gamma + 1,
    V))``, padded past ``length`` (drafts -1, uniform rows)."""
    drafts = np.full(gamma, -1, dtype=np.int64)
    raw_p = np.tile(uniform_row(), (gamma + 1, 1))
    raw_q = np.tile(uniform_row(), (gamma, 1))
    p = raw_p.copy()
    prefix: tuple[int, ...] = ()
    for position in range(length + 1):
        raw_p[position], p[position] = model.raw(prefix)[0], model.target(prefix)
        if position == length:
            break
        raw_q[position] = model.raw(prefix)[1]
        where = f"the {model.name} chain at {prefix}"
        drafts[position] = choose(model.target(prefix), model.draft(prefix), 1, where)[0]
        prefix = (*prefix, int(drafts[position]))
    return drafts, raw_p, raw_q, p


def path_slots(branching: tuple[int, ...]) -> np.ndarray:
    """(L, D): the child slot of every path at every depth, paths in mixed-radix order of ``branching``."""
    return np.array(list(itertools.product(*(range(b) for b in branching))), dtype=np.int64).reshape(
        math.prod(branching), len(branching))


def tree_nodes(branching: tuple[int, ...]) -> list[tuple[tuple[int, ...], int]]:
    """Every node of a drafted tree of ``branching``, breadth first (root first, children in slot order; the
    numbering of ``resispec.sequence.enumeration.branching_parents``): its slot prefix and the first path through it
    (``path_slots`` order)."""
    strides = np.cumprod((1,) + branching[::-1])[::-1][1:]
    nodes = [()] + [prefix for d in range(1, len(branching) + 1)
                    for prefix in dict.fromkeys(tuple(s[:d]) for s in path_slots(branching).tolist())]
    return [(prefix, int(np.dot(prefix, strides[:len(prefix)]))) for prefix in nodes]


def parent_rows(rows: np.ndarray, branching: tuple[int, ...]) -> np.ndarray:
    """Draft rows from the paths layout ``(B, L, D, V)`` to one row per parent (internal node, breadth first)
    ``(B, N, V)``: the layout engines keep (``q_layout="parent"``)."""
    internal = [(prefix, path) for prefix, path in tree_nodes(branching) if len(prefix) < len(branching)]
    return np.stack([rows[:, path, len(prefix)] for prefix, path in internal], axis=1)


def draft_tree(model: ChainModel, branching: tuple[int, ...], choose: Chooser) -> tuple[np.ndarray, ...]:
    """One drafted tree as paths: ``(paths (L, D), raw p (L, D + 1, V), raw q (L, D, V), p (L, D + 1, V))``.

    Children are chosen breadth first, each node's from ``q`` at its prefix.
    """
    depth = len(branching)
    children: dict[tuple[int, ...], np.ndarray] = {}
    level: list[tuple[tuple[int, ...], tuple[int, ...]]] = [((), ())]  # (slots, tokens) of each node
    for d in range(depth):
        following = []
        for slots, tokens in level:
            where = f"the {model.name} tree at {tokens}"
            drawn = choose(model.target(tokens), model.draft(tokens), branching[d], where)
            children[slots] = drawn
            following.extend(((*slots, s), (*tokens, int(x))) for s, x in enumerate(drawn))
        level = following
    slots = path_slots(branching)
    paths = np.array([[children[tuple(path[:d])][path[d]] for d in range(depth)] for path in slots],
                     dtype=np.int64).reshape(slots.shape)
    raw_p = np.empty((len(slots), depth + 1, MODEL_VOCAB))
    raw_q = np.empty((len(slots), depth, MODEL_VOCAB))
    p = np.empty_like(raw_p)
    for path in range(len(slots)):
        for d in range(depth + 1):
            prefix = tuple(int(x) for x in paths[path, :d])
            raw_p[path, d], p[path, d] = model.raw(prefix)[0], model.target(prefix)
            if d < depth:
                raw_q[path, d] = model.raw(prefix)[1]
    return paths, raw_p, raw_q, p


def level_rows(level: str, models: list[ChainModel], gamma: int, branching: tuple[int, ...],
               lengths: list[np.ndarray], choose: Chooser) -> DraftedRows:
    """Chain or tree rows: for model m, one row per entry of ``lengths[m]`` (chain: that row's draft length;
    tree: ignored, the depth)."""
    parts = []
    for index, (model, model_lengths) in enumerate(zip(models, lengths)):
        rows = [draft_chain(model, gamma, int(g), choose) if level == "chain" else draft_tree(model, branching, choose)
                for g in model_lengths]
        tokens, raw_p, raw_q, p = (np.stack(column) for column in zip(*rows))
        parts.append(DraftedRows(raw_p, raw_q, p, tokens, np.full(len(rows), index, dtype=np.int64),
                                 np.asarray(model_lengths, dtype=np.int64)))
    return stack_rows(parts)
