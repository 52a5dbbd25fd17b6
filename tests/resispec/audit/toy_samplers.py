"""Samplers written for these tests: correct ones and deliberately buggy ones, each bug a known kind.

- ``sps_chain``: single-draft speculative sampling along a chain (NumPy probs), with the claimed processing,
  drawing from NumPy's global generator unless handed ``rng`` (as engines draw from a global one);
  ``forget_bonus=True`` draws the bonus token from the *unprocessed* target (the bug of a logits processor
  skipped in one branch), ``forget_top_k_residual=True`` the residual from the unprocessed rows; ``by_rank=True``
  draws the residual token by rank and ``collapse_ties=True`` collapses it as ``rank_node`` does (its chain twin);
- ``race_node``: sps at one node (torch probs) whose residual token is an exponential race, with per-row
  ``torch.Generator``s (torch's global generator for the unseeded rows); ``mixed_batch_bug=True`` writes the
  unseeded rows' noise into a copy (advanced indexing) when seeded and unseeded rows share a batch, so those
  rows keep their initial noise of 1 and the race becomes an argmax (the mechanism vLLM's v0 rejection
  sampler had before vllm-project/vllm#10863, written anew here);
- ``rng_node``: sps at one node drawing from the ``rng`` extra (NumPy); ``accept_at_equality=True`` accepts
  iff ``u <= ratio``, which at ``u = 0`` accepts a candidate with p = 0;
- ``rank_node``: sps at one node whose residual token is drawn by rank (values sorted descending, inverse CDF over
  them); ``collapse_ties=True`` maps the drawn rank back to the smallest id holding that value, so of tied tokens
  only the first is ever drawn (the bug class of lightseekorg/tokenspeed PR #280, written anew);
- ``rrs_tree``: recursive rejection sampling down a tree of i.i.d. siblings (the ``branching`` extra), each node's
  residual drawn by rank; ``collapse_ties=True`` collapses it as ``rank_node`` does (its tree twin);
- ``processed_chain``: sps along a chain on NumPy logits, each position processed after the row's ``history`` and
  the round's earlier drafts; ``verified`` / ``bonus`` put other claims (one, or one per row) on the verified target
  rows / the bonus row (the bugs: min-p and a logit bias applied to the bonus row only, vllm-project/vllm#42744; a
  penalty dropped under speculation, vllm-project/vllm#18902, NVIDIA/TensorRT-LLM#17701); ``processing`` may be a
  list (the ``processing`` extra, one entry per row), and ``per_token_buffer_bug=True`` processes the draft with the
  temperature at index b of a per-token buffer (one entry per row and position) instead of row b's, as TensorRT-LLM
  built draft probabilities from ``temperatures[:batch_size]`` (PR #12588's review).
"""

from dataclasses import replace
from functools import lru_cache

import numpy as np
import torch

from resispec.processing import Processing, process_logits, process_probs


def _processed(logits: np.ndarray, claims: Processing, seen: tuple) -> np.ndarray:
    """``process_logits`` of a float64 row, memoised: rows of one context repeat, and the audit's time is measured
    with this sampler (scripts/audit_sampler_false_alarms.py)."""
    return _processed_bytes(np.asarray(logits, dtype=np.float64).tobytes(), claims, seen)


@lru_cache(maxsize=1 << 16)
def _processed_bytes(row: bytes, claims: Processing, seen: tuple) -> np.ndarray:
    out = process_logits(np.frombuffer(row), claims, seen)
    out.flags.writeable = False
    return out


def _draw(weights: np.ndarray, u: float) -> int:
    cumulative = np.cumsum(weights)
    return min(int(np.searchsorted(cumulative, u * cumulative[-1], side="right")), int(np.flatnonzero(weights > 0)[-1]))


PLAIN = Processing()


def _rank_draw(weights: np.ndarray, u: float, collapse_ties: bool) -> int:
    """A token drawn by rank (values sorted descending, inverse CDF over them); with ``collapse_ties`` the drawn rank
    is mapped back to the smallest id holding that value."""
    order = np.argsort(-weights, kind="stable")
    rank = _draw(weights[order], u)
    return int(np.flatnonzero(weights == weights[order][rank])[0] if collapse_ties else order[rank])


def sps_chain(p, q, drafts, processing=PLAIN, forget_bonus=False, forget_top_k_residual=False, rng=np.random,
              by_rank=False, collapse_ties=False):
    target, draft = process_probs(p, processing), process_probs(q, processing)
    if forget_bonus:
        target[:, -1] = p[:, -1]
    out = np.full((drafts.shape[0], drafts.shape[1] + 1), -1)
    for b in range(drafts.shape[0]):
        length = int((drafts[b] >= 0).sum())
        for i in range(length + 1):
            if i == length:
                out[b, i] = _draw(target[b, i], rng.random())
                break
            x = drafts[b, i]
            if rng.random() < target[b, i, x] / draft[b, i, x]:
                out[b, i] = x
                continue
            rows = (p[b, i], q[b, i]) if forget_top_k_residual else (target[b, i], draft[b, i])
            residual = np.maximum(rows[0] - rows[1], 0.0)
            weights = residual if residual.sum() > 0 else rows[0]
            out[b, i] = _rank_draw(weights, rng.random(), collapse_ties) if by_rank else _draw(weights, rng.random())
            break
    return out


def sps_node(p, q, candidates, **options):
    """``sps_chain`` on a chain of one (the bonus row is p again; a node never emits it)."""
    return sps_chain(np.stack([p, p], axis=1), q[:, None], candidates, **options)[:, 0]


def race_node(p, q, candidates, generators=None, mixed_batch_bug=False):
    rows = torch.arange(p.shape[0])
    generators = generators or [None] * p.shape[0]
    seeded = [b for b, g in enumerate(generators) if g is not None]
    unseeded = [b for b, g in enumerate(generators) if g is None]
    u = torch.empty(p.shape[0], dtype=p.dtype)
    for b in seeded:
        u[b] = torch.rand(1, generator=generators[b], dtype=p.dtype)[0]
    if unseeded:
        u[unseeded] = torch.rand(len(unseeded), dtype=p.dtype)
    x = candidates[:, 0]
    accept = u < p[rows, x] / q[rows, x]
    residual = (p - q).clamp(min=0)
    residual = torch.where(residual.sum(-1, keepdim=True) > 0, residual, p)
    noise = torch.ones_like(residual)
    if not seeded:
        noise.exponential_()
    else:
        for b in seeded:
            noise[b].exponential_(generator=generators[b])
        if mixed_batch_bug:
            noise[unseeded].exponential_()  # advanced indexing: a copy is filled, noise keeps its ones
        elif unseeded:
            noise[unseeded] = torch.empty(len(unseeded), p.shape[1], dtype=p.dtype).exponential_()
    recovered = (residual / noise).argmax(-1)
    return torch.where(accept, x, recovered)


def rng_node(p, q, candidates, rng, accept_at_equality=False):
    rows = np.arange(p.shape[0])
    x = candidates[:, 0]
    ratio = p[rows, x] / q[rows, x]
    u = rng.random(p.shape[0])
    accept = u <= ratio if accept_at_equality else u < ratio
    residual = np.maximum(p - q, 0.0)
    residual[residual.sum(axis=1) <= 0] = p[residual.sum(axis=1) <= 0]
    recovered = np.array([_draw(residual[b], v) for b, v in enumerate(rng.random(p.shape[0]))])
    return np.where(accept, x, recovered)


def rank_node(p, q, candidates, collapse_ties=False, rng=np.random):
    rows = np.arange(p.shape[0])
    x = candidates[:, 0]
    accept = rng.random(p.shape[0]) < p[rows, x] / q[rows, x]
    tokens = x.copy()
    for b in np.flatnonzero(~accept):
        residual = np.maximum(p[b] - q[b], 0)
        residual = residual if residual.sum() > 0 else p[b]
        tokens[b] = _rank_draw(residual, rng.random(), collapse_ties)
    return tokens


def rrs_tree(p, q, paths, branching, collapse_ties=False, rng=np.random):
    """At each node from the root: its children in slot order, child x accepted with probability
    ``min(1, r(x) / q(x))`` (``r`` the node's target, then the normalised ``(r - q)+`` after each rejection), the
    accepted child's node next; all rejected: a token of ``r`` by rank; at a leaf: a token of its target row."""
    strides = np.cumprod((1,) + tuple(branching[::-1]))[::-1][1:]
    out = np.full((paths.shape[0], len(branching) + 1), -1)
    for b in range(paths.shape[0]):
        path = 0  # the first path through the current node
        for d in range(len(branching) + 1):
            residual = p[b, path, d]
            if d == len(branching):
                out[b, d] = _draw(residual, rng.random())
                break
            for slot in range(branching[d]):
                x = paths[b, path + slot * strides[d], d]
                if rng.random() < residual[x] / q[b, path, d, x]:
                    out[b, d], path = x, path + slot * strides[d]
                    break
                residual = np.maximum(residual - q[b, path, d], 0.0)
                residual = residual / residual.sum()
            else:
                out[b, d] = _rank_draw(residual, rng.random(), collapse_ties)
                break
    return out


def processed_chain(p, q, drafts, history, processing=PLAIN, verified=None, bonus=None, rng=np.random,
                    per_token_buffer_bug=False):
    rows = processing if isinstance(processing, list) else [processing] * drafts.shape[0]
    verified, bonus = ((claims if isinstance(claims, list) else [claims] * drafts.shape[0])
                       for claims in (verified, bonus))
    temperatures = np.repeat([claims.temperature for claims in rows], drafts.shape[1] + 1)  # one per token
    out = np.full((drafts.shape[0], drafts.shape[1] + 1), -1)
    for b in range(drafts.shape[0]):
        claims = rows[b]
        if per_token_buffer_bug:  # the draft's temperature read from temperatures[:batch] of the per-token buffer
            claims = replace(claims, temperature=float(temperatures[:drafts.shape[0]][b]))
        for i in range(drafts.shape[1] + 1):
            seen = tuple(history[b]) + tuple(int(x) for x in drafts[b, :i])
            if i == drafts.shape[1]:
                out[b, i] = _draw(_processed(p[b, i], bonus[b] or rows[b], seen), rng.random())
                break
            target = _processed(p[b, i], verified[b] or rows[b], seen)
            draft = _processed(q[b, i], claims, seen)  # the law the drafts were drawn from
            x = drafts[b, i]
            with np.errstate(divide="ignore", invalid="ignore"):  # a buggy draft law may miss the drafted token
                accept = rng.random() < target[x] / draft[x]
            if accept:
                out[b, i] = x
                continue
            residual = np.maximum(target - draft, 0.0)
            out[b, i] = _draw(residual if residual.sum() > 0 else target, rng.random())
            break
    return out


def processed_node(p, q, candidates, history, **options):
    """``processed_chain`` on a chain of one (the bonus row is p again; a node never emits it)."""
    return processed_chain(np.stack([p, p], axis=1), q[:, None], candidates, history, **options)[:, 0]
