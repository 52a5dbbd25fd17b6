"""The decoding loop: speculative decoding over a candidate tree, or plain autoregressive sampling.

One speculative round (node 0 = the last emitted token):

1. the draft grows the tree level by level; each internal node's children are drawn from its
   processed q by the verifier's drafting rule (``resispec.engine.decode.expand.expand_tree``; equal root-to-node
   paths share one row of both models);
2. the target scores every row in one forward over its KV cache (``grow``);
3. verification walks down from the root: at node n the verifier sees p_n, q_n and n's children;
   an accepted child becomes the next node, a rejection emits a residual token and stops; reaching a
   leaf emits one token drawn from p at the leaf;
4. both models keep the accepted path's KV entries (``commit``); the last emitted token is the next root.

A draft with an ``observe(states)`` method (the feature draft, `resispec.engine.drafts.feature_draft`) gets the target's
final-norm states at the accepted path's rows after each round, before its ``commit``: functions of the
accepted tokens, so its q stays a function of the context.

A draft with a ``proposes(context)`` method (the n-gram draft, `resispec.engine.drafts.ngram`) may decline a round:
where it returns false for the context (prompt and emitted tokens, the root last) the round is a one-token
round, one token sampled from p at the root. The choice is a function of the context only, made before any
candidate is drawn, so it leaves every emitted token's law p.

On the chain part of a tree (its leading levels of one child each: all of a chain) with a verifier whose
one-candidate rule is single-draft speculative sampling (``single_candidate_is_sps``), those nodes are
decided by sps in one batched call, each node with its own uniforms: a node's decision depends only on its
own (p, q, candidate, uniforms), so deciding the nodes past the first rejection too (and ignoring them)
leaves the law of the walk unchanged.

Each emitted token is distributed as p at the node where it was emitted, given everything before it,
so the emitted sequence follows the target's sequential law (per-node exactness, induction on depth).
With ``audit`` on, each emitted token y also yields a randomized PIT value
``P_p(Y < y) + U p(y)`` against that p; under exactness they are i.i.d. Uniform(0, 1).

With a shape policy (``shapes``: `ShapePolicy`, e.g. the online cost model `resispec.engine.decode.adaptive`), each
round's shape (``()``: a plain token; else a branching) is asked of the policy before the round, from what it has
seen of past rounds only (`RoundRecord`), and the policy is told each round's measurements after it. A self-draft
that starts on the target's prompt cache (``prefill_from``) restarts on the target's cache after plain tokens rather
than feeding them (its q stays a function of the past). A shape is
thus fixed before any of its round's draws, and every round of every shape emits tokens with the target's law
given everything before them: the sequence keeps the target's law (docs/draft.md, "Adaptive shapes").
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

from resispec.audit import randomized_pit
from resispec.engine.decode.expand import DraftedTree, expand_tree
from resispec.engine.decode.processing import Sampling, draft_probs, target_probs
from resispec.engine.decode.tree_search import MAX_NODES
from resispec.engine.decode.walk import sample_rows, walk
from resispec.engine.drafts.base import Draft
from resispec.engine.logs.node_log import NodeLog
from resispec.engine.runtime.compact_lm import lm_for
from resispec.engine.runtime.tree import CandidateTree
from resispec.engine.verifiers.strategy import Verification

AUTOREGRESSIVE = "ar"
HOOKS_STREAM = 1
"""Second word of the audit hooks' seed ``(seed, HOOKS_STREAM)``: a stream apart from the decisions'."""


@dataclass
class DecodeStats:
    """Counters of one generation. ``accepted_by_depth[d]`` / ``reached_by_depth[d]``: how often a
    candidate at depth d + 1 was accepted / verification reached a node at depth d."""

    tokens: int = 0
    target_forwards: int = 0
    draft_forwards: int = 0
    seconds: float = 0.0
    accepted_by_depth: list[int] = field(default_factory=list)
    reached_by_depth: list[int] = field(default_factory=list)
    pit: list[float] = field(default_factory=list)
    parity_checked: int = 0
    parity_mismatches: int = 0
    draft_seconds: float = 0.0
    target_seconds: float = 0.0
    verify_seconds: float = 0.0
    prefill_seconds: float = 0.0
    tree: dict = field(default_factory=dict)
    shapes: list[dict] = field(default_factory=list)
    """With a shape policy: its changes of shape in this generation (``at_token``, ``branching``, ``reason``,
    ``index``: the change's number in the generation), the first and last ``KEPT_CHANGES`` (`ShapeChanges`)."""
    shapes_dropped: int = 0
    """Changes of shape in this generation left out of ``shapes`` (between its first and its last kept ones)."""
    token_seconds: list[float] = field(default_factory=list)
    """Seconds from the start to each token's output (rates over a window of tokens)."""
    shape_tokens: dict[str, int] = field(default_factory=dict)
    """With a shape policy: tokens emitted per shape (``"plain"``, ``"1,1"``, ...)."""

    @property
    def bookkeeping_seconds(self) -> float:
        """Wall time outside the draft's and the target's forwards and verification (caches, hooks, loop; the
        prompt's prefill, ``prefill_seconds`` of it)."""
        return self.seconds - self.draft_seconds - self.target_seconds - self.verify_seconds

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")

    @property
    def accepted_per_forward(self) -> float:
        """Emitted tokens per target forward: accepted candidates plus the target's own token."""
        return self.tokens / self.target_forwards if self.target_forwards else float("nan")

    @property
    def acceptance_by_depth(self) -> list[float]:
        return [a / r if r else float("nan") for a, r in zip(self.accepted_by_depth, self.reached_by_depth)]


@dataclass(frozen=True)
class RoundRecord:
    """What the decoder measured in one round (seconds of wall time, from the shape's choice to the commit).

    ``branching``: its shape (``()``: a plain token, or a round the draft declined); ``target_rows``: rows of its
    target forward; ``accepted``: candidates accepted along the walk (0..depth).
    """

    branching: tuple[int, ...]
    tokens: int
    seconds: float
    target_rows: int
    target_seconds: float
    draft_seconds: float = 0.0
    verify_seconds: float = 0.0
    accepted: int = 0


KEPT_CHANGES = 32
"""Changes of shape a `ShapeChanges` keeps at each end of its history (the first and the last ``KEPT_CHANGES``)."""


class ShapeChanges:
    """A shape policy's changes of shape (dicts: ``at_token``, ``branching``, ``reason``), bounded: the first
    ``keep`` and the last ``keep`` are kept, the ones between only counted, so that a long decode (or a process
    decoding many generations with one policy) holds at most ``2 keep`` of them. Each kept change gets
    ``index``, its number in the whole history (0: the first); ``len`` is how many were ever added."""

    def __init__(self, keep: int = KEPT_CHANGES) -> None:
        self.first: list[dict] = []
        self.last: deque[dict] = deque(maxlen=keep)
        self.keep = keep
        self.total = 0

    def append(self, change: dict) -> None:
        change = {**change, "index": self.total}
        (self.first if len(self.first) < self.keep else self.last).append(change)
        self.total += 1

    def __len__(self) -> int:
        return self.total

    def __iter__(self) -> Iterator[dict]:
        """The kept changes, oldest first."""
        yield from self.first
        yield from self.last

    def __getitem__(self, position: int) -> dict:
        """A kept change by position among the kept ones (``-1``: the last added)."""
        return list(self)[position]

    def since(self, start: int) -> tuple[list[dict], int]:
        """The kept changes of index ``start`` on (``index`` renumbered from ``start``: 0 is the first of them) and
        how many of index ``start`` on were dropped."""
        kept = [{**change, "index": change["index"] - start} for change in self if change["index"] >= start]
        return kept, self.total - start - len(kept)


class ShapePolicy(Protocol):
    """Chooses each round's shape from past rounds only (module docstring)."""

    changes: ShapeChanges
    """Its changes of shape so far (``at_token``, ``branching``, ``reason``)."""

    def next_shape(self, emitted: int, context: list[int]) -> tuple[int, ...]:
        """The next round's branching (``()``: plain), ``emitted`` tokens in; ``context``: prompt and emitted ids."""

    def observe(self, record: RoundRecord) -> None:
        """One round's measurements, after it."""


def shape_text(branching: tuple[int, ...]) -> str:
    """``(1, 1)`` -> ``"1,1"``; ``()`` -> ``"plain"``."""
    return ",".join(map(str, branching)) or "plain"


def drafts_at(draft: Draft, context: list[int]) -> bool:
    """Whether ``draft`` drafts a tree at the end of ``context`` (long ids, the root last): its
    ``proposes(context)`` where it has one, else always."""
    proposes = getattr(draft, "proposes", None)
    return proposes is None or proposes(context)


class Decoder:
    """Generates from a target model, speculatively (a verifier name and a draft) or autoregressively.

    Args:
        target_model: the target p (a transformers causal LM).
        draft: the draft q (``resispec.engine.drafts.Draft``); ignored for ``verifier="ar"``.
        verifier: how to verify, resolved once (``resispec.engine.verifiers.strategy.Verification``), or its name: a
            verifier of the zoo, a sequence-level one (``block``, ``traversal``, ``traversal_wor``), or
            ``"ar"`` for plain sampling.
        branching: children per node at each depth, e.g. ``(4, 2, 2, 1)``.
        sampling: temperature / top-k / top-p, applied identically to p and q.
        seed: all randomness flows from it: verification and sampling uniforms from
            ``numpy.random.default_rng(seed)``, drafting from a ``torch.Generator`` seeded with it, and
            the audit hooks' uniforms (PIT, parity sampling) from ``default_rng((seed, HOOKS_STREAM))``,
            so that turning a hook on never changes the decoded tokens.
        audit: record a randomized-PIT value per emitted token.
        parity_fraction: re-decide this fraction of verified nodes with the NumPy reference.
        log: record (p, q, candidates, emitted) of every verified node (``resispec.engine.logs.node_log``).
        shapes: a `ShapePolicy` choosing each round's shape (``branching`` is then only the first shape checked);
            None: every round has ``branching``.
    """

    def __init__(self, target_model: torch.nn.Module, draft: Draft | None, verifier: str | Verification,
                 branching: tuple[int, ...] = (4, 2, 2, 1), sampling: Sampling = Sampling(),
                 seed: int = 0, audit: bool = False, parity_fraction: float = 0.0,
                 log: NodeLog | None = None, shapes: ShapePolicy | None = None) -> None:
        self.target = lm_for(target_model)
        self.rng = np.random.default_rng(seed)
        self.hooks_rng = np.random.default_rng((seed, HOOKS_STREAM))
        self.speculative = verifier != AUTOREGRESSIVE
        self.tree: CandidateTree | None = None
        if self.speculative:
            if draft is None:
                raise ValueError("draft: speculative decoding needs a draft model")
            verification = verifier if isinstance(verifier, Verification) else Verification.of(verifier)
            self.round_verifier = verification.round
            if self.round_verifier is not None and (parity_fraction or log is not None):
                raise ValueError(f"verifier: {verification.name} decides whole rounds; the per-node log and parity "
                                 "check apply to node-by-node verifiers only")
            self.verification = verification
            self.node_verifier = verification.node_verifier(parity_fraction, self.hooks_rng)
            self._sps_verifier = verification.chain_verifier(parity_fraction, self.hooks_rng)  # None: not sps
            self._use(tuple(branching))
        self.shapes = shapes if self.speculative else None
        self.draft = draft
        self.sampling = sampling
        self.generator = torch.Generator(device=target_model.device).manual_seed(seed)
        self.audit = audit
        self.log = log
        self.stats = DecodeStats()
        self._level_q: list[torch.Tensor] = []  # this round's processed q, level by level (`_choose`)
        # outside the timed loop: a tree forward feeds its distinct paths, from depth + 1 rows to every node
        if self.shapes is not None:
            self.target.prepare(1, MAX_NODES)
        else:
            self.target.prepare(*((self.tree.depth + 1, self.tree.num_nodes) if self.speculative else (1, 1)))

    def _use(self, branching: tuple[int, ...]) -> None:
        """Decode the next rounds on ``branching`` (checked against the verification)."""
        if self.tree is not None and self.tree.branching == branching:
            return
        self.tree = CandidateTree.from_branching(branching)
        self.verification.check_branching(self.tree.branching)
        self.chain_length = next((d for d, b in enumerate(self.tree.branching) if b > 1), self.tree.depth)
        self.chain_verifier = self._sps_verifier if self.chain_length else None

    def generate(self, prompt_ids: torch.Tensor, max_new_tokens: int, eos_id: int | None = None) -> Iterator[int]:
        """Yield up to ``max_new_tokens`` tokens after ``prompt_ids`` (long [T]); stop after ``eos_id``."""
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens: must be >= 1, got {max_new_tokens}")
        self.stats = DecodeStats()
        start = time.perf_counter()
        self.target.prefill(prompt_ids)
        shares_cache = getattr(self.draft, "shares_prompt_cache_with", None)
        resync = self.speculative and shares_cache is not None and shares_cache(self.target)
        if resync:
            self.draft.prefill_from(self.target, prompt_ids)
        elif self.speculative:
            self.draft.prefill(prompt_ids)
        self.stats.prefill_seconds = time.perf_counter() - start
        root = int(prompt_ids[-1])
        if self.log is not None:
            self.log.start_chain()
        emitted, context = 0, prompt_ids.tolist()
        changes = len(self.shapes.changes) if self.shapes is not None else 0
        told = 0  # plain tokens the draft was only told since its last round
        while emitted < max_new_tokens:
            audited = len(self.stats.pit)
            shape = self._next_shape(emitted, context, changes)
            clock, spent = time.perf_counter(), self._spent()
            rows, accepted = 1, 0
            if self.speculative and shape and drafts_at(self.draft, context):
                if resync and told > 1:  # after plain tokens: the target's cache, not a catch-up forward
                    self.draft.prefill_from(self.target, torch.tensor(context))
                told = 0
                tokens, rows, accepted = self._speculative_round(root, emitted)
            else:
                shape, told = (), told + 1
                tokens = self._autoregressive_step(root)
                if self.speculative:  # a one-token round: the draft only learns the root
                    self._observe(torch.tensor([0]))
                    self.draft.commit(torch.tensor([root]))
            if self.shapes is not None:
                target, draft, verify = (after - before for after, before in zip(self._spent(), spent))
                self.shapes.observe(RoundRecord(shape, len(tokens), time.perf_counter() - clock, rows, target,
                                                draft, verify, accepted))
                self.stats.shape_tokens[shape_text(shape)] = self.stats.shape_tokens.get(shape_text(shape), 0) + len(
                    tokens)
            tokens = tokens[: max_new_tokens - emitted]
            if eos_id in tokens:
                tokens = tokens[: tokens.index(eos_id) + 1]
            del self.stats.pit[audited + len(tokens):]  # audit exactly the tokens that are output
            if self.log is not None:
                self.log.discard_from(emitted + len(tokens))
            for token in tokens:
                emitted += 1
                self.stats.tokens = emitted
                self.stats.seconds = time.perf_counter() - start
                self.stats.token_seconds.append(self.stats.seconds)
                yield token
            if tokens[-1] == eos_id:
                return
            root = tokens[-1]
            context += tokens

    def _spent(self) -> tuple[float, float, float]:
        return self.stats.target_seconds, self.stats.draft_seconds, self.stats.verify_seconds

    def _next_shape(self, emitted: int, context: list[int], changes: int) -> tuple[int, ...]:
        """This round's branching: the policy's (its changes since this generation's start into the stats), or
        the decoder's own tree; ``()`` for plain decoding."""
        if self.shapes is None:
            return self.tree.branching if self.speculative else ()
        shape = tuple(self.shapes.next_shape(emitted, context))
        if len(self.shapes.changes) != changes + len(self.stats.shapes) + self.stats.shapes_dropped:
            self.stats.shapes, self.stats.shapes_dropped = self.shapes.changes.since(changes)
        if shape:
            self._use(shape)
        return shape

    def _observe(self, rows: torch.Tensor) -> None:
        """Hand a draft that reads the target's states (an ``observe`` method: `resispec.engine.drafts.feature_draft`)
        those of the last target forward's ``rows`` (long [m]: the accepted path, root first)."""
        observe = getattr(self.draft, "observe", None)
        if observe is not None:
            observe(self.target.last_features[rows])

    def _emit(self, p: torch.Tensor, token: int) -> None:
        """Record the randomized PIT of ``token`` against ``p`` (V,) when auditing."""
        if self.audit:
            self.stats.pit.append(randomized_pit(p.cpu().numpy(), token, float(self.hooks_rng.random())))

    def _sample(self, p: torch.Tensor) -> int:
        """One token from p (V,) by inverse CDF at a uniform of the loop's generator."""
        token = sample_rows(p[None], self.rng)[0]
        self._emit(p, token)
        return token

    def _autoregressive_step(self, root: int) -> list[int]:
        start = time.perf_counter()
        logits = self.target.grow(torch.tensor([root]), torch.tensor([-1]))
        self.stats.target_forwards += 1
        self.stats.target_seconds += time.perf_counter() - start
        start = time.perf_counter()
        token = self._sample(target_probs(logits, self.sampling)[0])
        self.stats.verify_seconds += time.perf_counter() - start
        self.target.commit(torch.tensor([root]))
        return [token]

    def _choose(self, q_logits: torch.Tensor, k: int) -> torch.Tensor:
        """A level's children from its processed q, kept (``_level_q``) for the verification: the very rows
        the candidates were drawn from, processed once."""
        q = draft_probs(q_logits, self.sampling)
        self._level_q.append(q)
        return self.node_verifier.draft(q, k, self.generator)

    def _speculative_round(self, root: int, position: int) -> tuple[list[int], int, int]:
        """One round; ``position`` is the number of tokens this generation emitted before it. Returns the emitted
        tokens, the rows of the target's forward and the number of accepted candidates."""
        tree, clock = self.tree, time.perf_counter()
        self._level_q = []
        drafted = expand_tree(self.draft, tree, root, self._choose)
        self.stats.draft_forwards += tree.depth
        self.stats.draft_seconds += time.perf_counter() - clock
        clock = time.perf_counter()
        p_rows = self.target.grow(drafted.row_tokens, drafted.row_parents)
        self.stats.target_forwards += 1
        self.stats.target_seconds += time.perf_counter() - clock
        clock = time.perf_counter()
        node, emitted = self._walk(drafted, target_probs(p_rows, self.sampling)[drafted.row],
                                   torch.cat(self._level_q), position)
        self.stats.verify_seconds += time.perf_counter() - clock
        token_list = drafted.tokens.tolist()
        path = tree.path(node)
        accepted = torch.tensor([token_list[n] for n in path])
        self._observe(drafted.row[path])
        self.target.commit(accepted)
        self.draft.commit(accepted)
        self.stats.parity_checked = self.node_verifier.parity.checked + (
            self._sps_verifier.parity.checked if self._sps_verifier else 0)
        self.stats.parity_mismatches = self.node_verifier.parity.mismatches + (
            self._sps_verifier.parity.mismatches if self._sps_verifier else 0)
        return emitted, len(drafted.row_tokens), len(path) - 1

    def _walk(self, drafted: DraftedTree, p_all: torch.Tensor, q_all: torch.Tensor,
              position: int) -> tuple[int, list[int]]:
        """Verification from the root down (`resispec.engine.decode.walk`, one tree): ``(deepest accepted node,
        emitted tokens)``, each verified node counted, logged and audited as it is decided."""
        if self.round_verifier is not None:  # sequence-level: one decision for the whole round
            return self._round_decision(drafted.tokens, p_all, q_all)
        emitted = []

        def on_token(_: int, node: int, candidates: torch.Tensor | None, token: int, index: int) -> None:
            if candidates is not None:
                depth = int(self.tree.depths[node])
                self._count(depth, accepted=False)
                if self.log is not None:
                    self.log.record(p_all[node], q_all[node], candidates, token, index, position + len(emitted), depth)
                if index >= 0:
                    self._count(depth, accepted=True)
            self._emit(p_all[node], token)
            emitted.append(token)

        ends, _ = walk(self.tree, self.chain_length, self.chain_verifier, self.node_verifier, drafted.tokens[None],
                       p_all[None], q_all[None], self.rng, on_token)
        return ends[0], emitted

    def _round_decision(self, tokens: torch.Tensor, p_all: torch.Tensor, q_all: torch.Tensor) -> tuple[int, list[int]]:
        """A sequence-level verifier's round: the accepted path's last node and the emitted tokens
        (the path's drafted tokens, then the token emitted after it), counted and audited like the
        node-by-node walk (each token against p at its parent)."""
        tree = self.tree
        node, token = self.round_verifier(tree, tokens, p_all, q_all, self.rng)
        path, token_list, emitted = tree.path(node), tokens.tolist(), []
        for parent, child in zip(path, path[1:]):
            self._count(int(tree.depths[parent]), accepted=False)
            self._count(int(tree.depths[parent]), accepted=True)
            self._emit(p_all[parent], token_list[child])
            emitted.append(token_list[child])
        if int(tree.depths[node]) < tree.depth:
            self._count(int(tree.depths[node]), accepted=False)
        self._emit(p_all[node], token)
        return node, [*emitted, token]

    def _count(self, depth: int, accepted: bool) -> None:
        counters = self.stats.accepted_by_depth if accepted else self.stats.reached_by_depth
        while len(counters) <= depth:
            counters.append(0)
        counters[depth] += 1
