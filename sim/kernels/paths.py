"""Monte Carlo over rejection paths for the sequential WOR verifiers (rrs_wor, resispec_wor).

A state h is the prefix of rejected candidates (``resispec.sim.kernels.wor_states``). In state h the step
accepts the mass ``A_h = sum_x m_h(x)`` (``m_h = s_h a_h``, the state's ``accepted_mass``), and
rejecting x has mass ``b_h(x) = s_h(x) - m_h(x)`` and leads to state ``h x``, so
``P(reach h x) = P(reach h) b_h(x)``. The step statistics are sums over the states h of depth i - 1:

    accepted_i = sum_h P(reach h) A_h,   reached_i = sum_h P(reach h),   drift_i = sum_h P(reach h) TV(r_h, s_h).

A path starts at the root with weight ``W_1 = 1``; at step i it draws the rejected candidate that
continues, ``x_i ~ b_{h_i} / B_{h_i}`` with ``B = sum_x b(x)`` (inverse CDF of one uniform), and
``W_{i+1} = W_i B_{h_i}``. Then ``W_i A_{h_i}``, ``W_i`` and ``W_i TV(h_i)`` are unbiased for the three
sums (``P(reach h) = E[W_i 1{h_i = h}]``, importance sampling with the exact likelihood ratio). Each
step's accepted mass is integrated exactly and only the continuing candidate is drawn, so the
estimate varies far less than a mean over drafted tuples. A path ends when nothing can be rejected
(``B = 0``) or when it draws a candidate that the core's rule accepts outright (rejection mass from
rounding only: an empty rrs residual, or ``first_acceptance``'s guard).

Paths of one pair advance level by level, grouped by state: a state (a plan, for resispec_wor) is
built once however many paths pass through it. Level i uses the i-th block of ``samples`` uniforms
of the pair's own generator, whatever k is, so the statistics at k' < k are the first k' steps of
those at k.
"""

from __future__ import annotations

import numpy as np

from resispec.sampling import InverseCDF
from resispec.sim.batch import PairBatch
from resispec.sim.kernels.wor_states import WOR_STATES
from resispec.sim.steps import StepStats


def path_stats(name: str, batch: PairBatch, k: int, samples: int, streams: list[np.random.Generator]) -> StepStats:
    """``StepStats`` of the WOR verifier ``name`` from ``samples`` rejection paths per pair; pair n
    draws from ``streams[n]``. k is capped at the draft's support."""
    state_class = WOR_STATES[name]
    size = len(batch)
    accepted, reached, drift = (np.zeros((size, k)) for _ in range(3))
    for n, (p, q, stream) in enumerate(zip(batch.p, batch.q, streams)):
        count = min(k, int(np.count_nonzero(q)))
        groups = [(state_class.of(p, q.copy(), count), np.arange(samples), 1.0)]  # (state, paths, weight W)
        for i in range(count):
            uniforms = stream.random(samples) if i < count - 1 else None
            following = []
            for state, paths, weight in groups:
                mass = state.accepted_mass
                share = weight * paths.size / samples
                accepted[n, i] += share * mass.sum()
                reached[n, i] += share
                drift[n, i] += share * state.tv
                if uniforms is None:
                    continue
                rejected = np.maximum(state.proposal - mass, 0.0)
                rejection = rejected.sum()
                if not rejection > 0:
                    continue
                drawn = InverseCDF(rejected)(uniforms[paths])
                for x in np.unique(drawn):
                    if state.acceptance(int(x)) < 1.0:
                        following.append((state.after_rejecting(int(x), count - i - 1), paths[drawn == x],
                                          weight * rejection))
            groups = following
    return StepStats(name, k, accepted, reached, drift, exact=False, samples=samples, unit="rejection paths")
