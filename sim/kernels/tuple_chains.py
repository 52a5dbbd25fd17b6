"""Step statistics of verifiers whose residual depends on the candidates drawn: rrs_wor, resispec_wor,
resispec_paper.

For each pair, candidate tuples are enumerated with their drafting probabilities (the core's
``DraftingScheme.tuples``) when there are at most ``enumeration_limit`` of them, which is exact;
otherwise (i.i.d. drafting only: WOR pairs with too many tuples take rejection paths,
``resispec.sim.kernels.paths``) ``samples`` tuples are drawn from the pair's own generator (Monte Carlo,
weight ``1 / samples`` each). Given a tuple the verification randomness is integrated out: step i
is reached with probability ``prod_{j<i} (1 - a_j)`` and accepts with probability ``a_i``. The
chains run over all tuples of all pairs (rows), in chunks of at most ``CHUNK_ELEMENTS`` floats per
array.

- rrs_wor: proposal ``s_i = norm(q without x_1..x_{i-1})`` (the undrawn mass summed directly), then the
  core's rejection step over rows: ``a_i = min(1, r_i(x_i) / s_i(x_i))``, ``r_{i+1} = norm((r_i - s_i)+)``.
- resispec_wor: the same proposal and the states of ``resispec.sim.kernels.wor_states`` (the k = 2 plan of the
  state while two or more candidates are left, the rrs_wor step for the last). A state depends only on
  the rejected prefix, so each pair's tuples are walked in lexicographic order, depth first, and a
  plan is built once per distinct prefix (O(V log V) each), keeping only the current path.
- resispec_paper (biased): proposal q, ``a_i = min(1, r_i(x_i) / q(x_i))``, ``r_{i+1}`` the published
  proxy residual, the core's own row rule (``resispec.verifiers.resispec_paper.paper_residual``).

Where rounding leaves a residual without mass, the rrs_wor chain keeps the target, as the core rule does
(``resispec.verifiers.rejection``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from resispec.drafting import DRAFTING_SCHEMES
from resispec.rows import zero_at_
from resispec.sampling import inverse_cdf
from resispec.sim.batch import PairBatch
from resispec.sim.kernels.wor_states import ResispecWorState
from resispec.sim.steps import StepStats
from resispec.verifiers.rejection import rejection_acceptance, rejection_residual
from resispec.verifiers.resispec_paper import paper_residual, pour_order

CHUNK_ELEMENTS = 1 << 22
"""Rows x vocabulary per chunk of a chain (32 MiB per float64 array)."""


@dataclass(frozen=True)
class CandidateTuples:
    """Tuples for every pair of a batch, flattened to rows: ``pair`` (R,), ``candidates`` (R, k)
    (padded past ``steps``), ``weight`` (R,) summing to 1 per pair, ``steps`` (R,) the number of
    candidates that exist; ``exact`` whether every pair was enumerated."""

    pair: np.ndarray
    candidates: np.ndarray
    weight: np.ndarray
    steps: np.ndarray
    exact: bool


def draw_tuples(q: np.ndarray, k: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` tuples of k i.i.d. candidates from ``q`` (shape (count, k)): the same draws, from the
    same generator state, as ``count`` successive calls of the core's ``DRAFTING_SCHEMES["iid"].draft``."""
    return inverse_cdf(q, rng.random((count, k)))


def candidate_tuples(batch: PairBatch, k: int, drafting: str, samples: int, enumeration_limit: int,
                     streams: list[np.random.Generator]) -> CandidateTuples:
    """Enumerate (exact) or sample the candidate tuples of every pair, pair n from ``streams[n]``; k is
    capped at the support of q for drafting schemes that cannot repeat a token."""
    scheme = DRAFTING_SCHEMES[drafting]
    pairs, tuples, weights, steps, exact = [], [], [], [], True
    for n, (q, stream) in enumerate(zip(batch.q, streams)):
        limit = scheme.max_candidates(q)
        count = k if limit is None else min(k, limit)
        if scheme.tuple_count(q, count) <= enumeration_limit:
            listed = list(scheme.tuples(q, count))
            drawn = np.array([candidates for candidates, _ in listed], dtype=np.int64).reshape(len(listed), count)
            weight = np.array([probability for _, probability in listed])
        elif drafting == "iid":
            drawn = draw_tuples(q, count, samples, stream)
            weight = np.full(samples, 1.0 / samples)
            exact = False
        else:
            raise ValueError(f"drafting: sampled tuples are i.i.d. only ({drafting} pairs take rejection paths)")
        padded = np.repeat(drawn[:, :1], k, axis=1)
        padded[:, :count] = drawn
        pairs.append(np.full(len(drawn), n))
        tuples.append(padded)
        weights.append(weight)
        steps.append(np.full(len(drawn), count))
    return CandidateTuples(np.concatenate(pairs), np.concatenate(tuples), np.concatenate(weights),
                           np.concatenate(steps), exact)


Chain = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""``(p, q, pair, candidates, steps) -> (a, tv)``: pairs p, q (shape (U, V)), each row's pair index
``pair`` (R,), its candidates (R, k) and number of steps (R,); returns the per-row acceptance
probability of each step given it is reached, and ``TV(r_i, s_i)`` (shape (R, k) each; only steps
< ``steps`` are meaningful)."""


def rrs_wor_chain(p: np.ndarray, q: np.ndarray, pair: np.ndarray, candidates: np.ndarray,
                  steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """rrs_wor on each row: the core's rejection step (``resispec.verifiers.rejection``) against the WOR
    proposal, plus the drift ``TV(r_i, s_i)`` it does not report. A padded step past a row's support has
    no proposal (all zeros) and accepts for sure; its statistics are never counted."""
    rows, k = candidates.shape
    accept, tv = np.ones((rows, k)), np.zeros((rows, k))
    target, undrawn = p[pair], q[pair]
    for i in range(k):
        left = undrawn.sum(axis=1, keepdims=True)
        proposal = np.divide(undrawn, left, out=np.zeros_like(undrawn), where=left > 0)
        accept[:, i] = rejection_acceptance(target, proposal, candidates[:, i])
        tv[:, i] = np.maximum(target - proposal, 0.0).sum(axis=1)
        target = rejection_residual(target, proposal)
        zero_at_(undrawn, candidates[:, i])
    return accept, tv


def resispec_wor_chain(p: np.ndarray, q: np.ndarray, pair: np.ndarray, candidates: np.ndarray,
                       steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """resispec_wor on each row, depth first over each pair's tuples (see the module docstring)."""
    rows, k = candidates.shape
    accept, tv = np.ones((rows, k)), np.zeros((rows, k))
    for n in np.unique(pair):
        mine = np.flatnonzero(pair == n)
        count = int(steps[mine[0]])
        mine = mine[np.lexsort(candidates[mine, :count].T[::-1])]
        path = [ResispecWorState.of(p[n], q[n].copy(), count)]  # path[i]: the state after rejecting i candidates
        previous = None
        for row in mine:
            drawn = candidates[row, :count]
            shared = 0 if previous is None else int(np.argmin(np.append(drawn == previous, False)))
            del path[shared + 1:]
            for i, x in enumerate(drawn):
                if i == len(path):
                    path.append(path[-1].after_rejecting(int(drawn[i - 1]), count - i))
                accept[row, i], tv[row, i] = path[i].acceptance(int(x)), path[i].tv
                if accept[row, i] >= 1.0:
                    break
            previous = drawn
    return accept, tv


def paper_chain(p: np.ndarray, q: np.ndarray, pair: np.ndarray, candidates: np.ndarray,
                steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """resispec_paper on each row (see the module docstring)."""
    rows, k = candidates.shape
    index = np.arange(rows)
    order = pour_order(q)[pair]
    accept, tv = np.ones((rows, k)), np.zeros((rows, k))
    target, q = p[pair], q[pair]
    for i in range(k):
        x = candidates[:, i]
        target_x, q_x = target[index, x], q[index, x]
        rejectable = target_x < q_x
        accept[:, i] = np.where(rejectable, target_x / np.where(rejectable, q_x, 1.0), 1.0)
        tv[:, i] = np.maximum(target - q, 0.0).sum(axis=1)
        if i + 1 < k and rejectable.any():
            live = np.flatnonzero(rejectable)
            target[live] = paper_residual(target[live], q[live], x[live], order[live])
    return accept, tv


def chain_stats(name: str, chain: Chain, batch: PairBatch, tuples: CandidateTuples, k: int, samples: int) -> StepStats:
    """Run ``chain`` over every tuple row in chunks and reduce to per-pair ``StepStats``."""
    size = len(batch)
    accepted, reached, drift = (np.zeros((size, k)) for _ in range(3))
    chunk = max(1, CHUNK_ELEMENTS // batch.vocab_size)
    for start in range(0, tuples.pair.size, chunk):
        rows = slice(start, start + chunk)
        pair, steps, weight = tuples.pair[rows], tuples.steps[rows], tuples.weight[rows]
        unique, local = np.unique(pair, return_inverse=True)
        accept, tv = chain(batch.p[unique], batch.q[unique], local, tuples.candidates[rows], steps)
        exists = np.arange(k)[None, :] < steps[:, None]
        reach = np.cumprod(np.hstack([np.ones((accept.shape[0], 1)), 1.0 - accept[:, :-1]]), axis=1) * exists
        for i in range(k):
            accepted[:, i] += np.bincount(pair, weight * reach[:, i] * accept[:, i], minlength=size)
            reached[:, i] += np.bincount(pair, weight * reach[:, i], minlength=size)
            drift[:, i] += np.bincount(pair, weight * reach[:, i] * tv[:, i], minlength=size)
    return StepStats(name, k, accepted, reached, drift, tuples.exact, 0 if tuples.exact else samples)
