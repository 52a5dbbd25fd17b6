"""Samplers that draw their own drafts (``drafting="engine"``), written for these tests: sps with Gumbel-max drafting
whose randomness is keyed, as engines key it, by each request's seed and token position.

At each position a row draws, in this order from one stream, the draft's Gumbel noise ``G`` (V,), the acceptance
uniform ``u`` and the recovery's Gumbel noise ``G'`` (V,): the draft is ``argmax(log q + G)``, accepted iff
``u < p(x) / q(x)``, else the token is ``argmax(log residual + G')``; the bonus token ``argmax(log p + G)`` at
position gamma. The stream of a seeded row is ``numpy.random.default_rng([seed, position])``; unseeded rows draw
from NumPy's global generator. ``coupling`` writes a bug class anew, from its public description:

- ``"gumbel"``: the recovery reuses the draft's noise (``G' = G``), as vLLM's model runner keyed the draft's Gumbel
  noise and the recovery draw on the same Philox offset (vllm-project/vllm#47386, fixed in #54282);
- ``"uniform"``: the recovery is the residual's inverse CDF at the acceptance uniform ``u``, as vllm-ascend reused
  it (vllm-project/vllm-ascend#16370, #16920);
- ``"seed only"``: the stream is keyed by the seed alone, so a request repeats its noise round after round.
"""

import numpy as np

from resispec.audit.sampler import zoo_sampler
from resispec.drafting import DRAFTING_SCHEMES

COUPLINGS = (None, "gumbel", "uniform", "seed only")


def _streams(seeds, positions, rows: int, offset: int):
    """Per row the generator of its position ``positions[b] + offset`` (module doc)."""
    seeds = seeds if seeds is not None else [None] * rows
    out = []
    for b, seed in enumerate(seeds):
        if seed is None:
            out.append(np.random)
        else:
            key = [seed] if positions is None else [seed, int(positions[b]) + offset]
            out.append(np.random.default_rng(key))
    return out


def _gumbel_argmax(weights: np.ndarray, noise: np.ndarray) -> int:
    with np.errstate(divide="ignore"):
        return int(np.argmax(np.log(weights) + noise))


def _verify(p: np.ndarray, q: np.ndarray, x: int, stream, draft_noise: np.ndarray, coupling) -> tuple[bool, int]:
    """One position: whether the draft ``x`` is accepted, and the token emitted there."""
    u = stream.random()
    recovery_noise = stream.gumbel(size=p.size)
    if u < p[x] / q[x]:
        return True, x
    residual = np.maximum(p - q, 0.0)
    if residual.sum() <= 0:
        residual = p
    if coupling == "uniform":
        cumulative = np.cumsum(residual)
        index = int(np.searchsorted(cumulative, u * cumulative[-1], side="right"))
        return False, min(index, int(np.flatnonzero(residual > 0)[-1]))
    return False, _gumbel_argmax(residual, draft_noise if coupling == "gumbel" else recovery_noise)


def engine_node(p, q, k, seeds=None, positions=None, coupling=None):
    """sps at one node (k = 1), NumPy probabilities: ``(tokens (B,), candidates (B, 1))``."""
    assert k == 1, "engine_node drafts one candidate"
    rows, vocab = p.shape
    tokens, candidates = np.empty(rows, dtype=np.int64), np.empty((rows, 1), dtype=np.int64)
    for b, stream in enumerate(_streams(seeds, None if coupling == "seed only" else positions, rows, 0)):
        noise = stream.gumbel(size=vocab)
        candidates[b, 0] = _gumbel_argmax(q[b], noise)
        tokens[b] = _verify(p[b], q[b], int(candidates[b, 0]), stream, noise, coupling)[1]
    return tokens, candidates


def engine_chain(target, draft, rows, gamma, seeds=None, positions=None, coupling=None):
    """sps along a chain of gamma Gumbel-max drafts: ``(out (B, gamma + 1), drafts (B, gamma))``."""
    keyed = None if coupling == "seed only" else positions
    streams = [_streams(seeds, keyed, rows, i) for i in range(gamma + 1)]
    drafts, noises, qs = np.zeros((rows, gamma), dtype=np.int64), [], []
    for i in range(gamma):
        q = draft(drafts[:, :i])
        noise = np.stack([streams[i][b].gumbel(size=q.shape[1]) for b in range(rows)])
        drafts[:, i] = [_gumbel_argmax(q[b], noise[b]) for b in range(rows)]
        noises.append(noise)
        qs.append(q)
    p = target(drafts)
    out = np.full((rows, gamma + 1), -1, dtype=np.int64)
    for b in range(rows):
        for i in range(gamma + 1):
            if i == gamma:
                out[b, i] = _gumbel_argmax(p[b, i], streams[i][b].gumbel(size=p.shape[2]))
                break
            accepted, out[b, i] = _verify(p[b, i], qs[i][b], int(drafts[b, i]), streams[i][b], noises[i][b], coupling)
            if not accepted:
                break
    return out, drafts


def coupled_chain(target, draft, rows, gamma, seeds=None, positions=None):
    """``engine_chain`` with the shared Gumbel coupling, for the command line (docs/audit_sampler.md)."""
    return engine_chain(target, draft, rows, gamma, seeds, positions, coupling="gumbel")



def _drafted_tree(draft, rows: int, branching, choose):
    """Every node's children ``choose(q (B, V), count, depth, first path) -> (B, count)`` from its draft rows,
    breadth first:
    ``(paths (B, L, D), q (B, L, D, V))``, the contract's layout (siblings share q)."""
    depth, width = len(branching), int(np.prod(branching))
    below = np.cumprod((1,) + tuple(branching[::-1]))[::-1]  # paths under a node at each depth
    paths, q = np.zeros((rows, width, depth), dtype=np.int64), None
    for d in range(depth):
        for first in range(0, width, below[d]):
            row = draft(paths[:, first, :d])
            q = np.zeros((rows, width, depth, row.shape[1])) if q is None else q
            q[:, first:first + below[d], d] = row[:, None]
            children = choose(row, branching[d], d, first)
            for j in range(branching[d]):
                paths[:, first + j * below[d + 1]:first + (j + 1) * below[d + 1], d] = children[:, j, None]
    return paths, q


def engine_tree(target, draft, rows, branching, seeds=None, positions=None, coupling=None, siblings="iid"):
    """Recursive rejection sampling down a tree it drafts by Gumbel-max: ``(out (B, D + 1), paths (B, L, D))``.

    A node's children are ``argmax(log q + G_j)``, one noise ``G_j`` per child (``siblings="iid"``), or the top
    ``branching[d]`` of ``log q + G`` for one noise (``"wor"``: Gumbel-top-k, without replacement). At depth d a row's
    stream (position + d) draws every node's drafting noise, then at the node the round visits one acceptance
    uniform per child tried and the recovery noise: child x is accepted iff ``u < r(x) / q(x)`` (``r`` the target,
    then ``norm((r - q)+)`` after each rejection, q without the rejected child under ``"wor"``), the recovery is
    ``argmax(log r + G')``; ``coupling="gumbel"`` reuses the node's first drafting noise as ``G'``."""
    depth = len(branching)
    streams = [_streams(seeds, None if coupling == "seed only" else positions, rows, d) for d in range(depth + 1)]
    noises = {}  # each node's first drafting noise (B, V), by depth and first path

    def choose(q, count, d, first):
        noise = np.stack([[streams[d][b].gumbel(size=q.shape[1]) for b in range(rows)]
                          for _ in range(count if siblings == "iid" else 1)])
        noises[d, first] = noise[0]
        with np.errstate(divide="ignore"):
            keys = np.log(q)[None] + noise
        return keys.argmax(axis=2).T if siblings == "iid" else np.argsort(-keys[0], axis=1)[:, :count]

    paths, q = _drafted_tree(draft, rows, branching, choose)
    p = target(paths)
    below = np.cumprod((1,) + tuple(branching[::-1]))[::-1]
    out = np.full((rows, depth + 1), -1, dtype=np.int64)
    for b in range(rows):
        first = 0
        for d in range(depth + 1):
            stream, r = streams[d][b], p[b, first, d]
            if d == depth:
                out[b, d] = _gumbel_argmax(r, stream.gumbel(size=r.size))
                break
            row, step = q[b, first, d], below[d + 1]
            for j in range(branching[d]):
                x = int(paths[b, first + j * step, d])
                if stream.random() < r[x] / row[x]:
                    out[b, d], first = x, first + j * step
                    break
                r = np.maximum(r - row, 0.0) / np.maximum(r - row, 0.0).sum()
                if siblings == "wor":
                    row = np.where(np.arange(row.size) == x, 0.0, row) / (1.0 - row[x])
            else:
                recovery = stream.gumbel(size=r.size)
                out[b, d] = _gumbel_argmax(r, noises[d, first][b] if coupling == "gumbel" else recovery)
                break
    return out, paths


def engine_zoo(name, branching, siblings="iid"):
    """The zoo's tree verifier ``name`` wrapped with engine drafting: each node's children drawn by the scheme
    ``siblings`` with the row's own generator (``[seed, position]``; unseeded rows from NumPy's global one)."""
    verify, scheme = zoo_sampler(name, "tree", branching), DRAFTING_SCHEMES[siblings]

    def sampler(target, draft, rows, branching, seeds=None, positions=None):
        rngs = [np.random.default_rng(np.random.randint(2**31) if s is None else [s, int(positions[b])])
                for b, s in enumerate(seeds or [None] * rows)]
        paths, q = _drafted_tree(draft, rows, branching, lambda row, count, d, first: np.stack(
            [scheme.draft(row[b], count, rngs[b]) for b in range(rows)]))
        return verify(target(paths), q, paths), paths
    return sampler


def coupled_tree(target, draft, rows, branching, seeds=None, positions=None):
    """``engine_tree`` with the shared Gumbel coupling, for the command line (docs/audit_sampler.md)."""
    return engine_tree(target, draft, rows, branching, seeds, positions, coupling="gumbel")
