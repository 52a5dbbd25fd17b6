"""Sequence-level exact-law audit: one whole speculative round over small autoregressive models.

The models are functions ``prefix -> distribution`` (``resispec.sequence.enumeration``): the target
``p`` and the draft ``q``. The audit enumerates every drafted tree (each internal node's children by
the verifier's drafting rule, probability ``prod P(children | q)``), takes the verifier's exact
conditional law of the outcome ``(node, token)`` given the tree (its randomness integrated out), and
continues the emitted sequence (accepted tokens, then the emitted one) by target sampling to
``D + 1`` tokens:

    law(s) = sum_trees P(tree) sum_(n, y) P(n, y | tree) T(s | path(n) y),    s in V^(D+1)

which an exact verifier makes equal to the target's law ``T(s) = prod_t p(s_t | s_<t)``:
``max_error = max_s |law(s) - T(s)|`` (float64 rounding: ~1e-16; ``EXACT_TOLERANCE`` = 1e-12) and
``tv = 1/2 sum_s |law(s) - T(s)|``. ``expected_accepted`` is ``E[depth(n)]``, the draft tokens
accepted per round, averaged over trees and randomness.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from resispec.audit.exact import EXACT_TOLERANCE
from resispec.sequence import RoundVerifier, get_round_verifier
from resispec.sequence.enumeration import MAX_TREES, Conditional, RoundModels


@dataclass(frozen=True)
class RoundExactLaw:
    """The round's enumerated sequence law and the target's (shape (V^(D+1),), token ids big-endian),
    their distance, the expected accepted draft tokens per round and the trees visited."""

    law: np.ndarray
    target: np.ndarray
    max_error: float
    tv: float
    expected_accepted: float
    trees: int

    @property
    def exact(self) -> bool:
        return self.max_error <= EXACT_TOLERANCE


def exact_round_law(verifier: RoundVerifier | str, target: Conditional, draft: Conditional, vocab_size: int,
                    branching: Sequence[int], max_trees: int = MAX_TREES) -> RoundExactLaw:
    """The exact law of one round of ``verifier`` (a round verifier or a name; zoo names verify node
    by node) over the ``target`` and ``draft`` models, against the target's (module doc)."""
    verifier = get_round_verifier(verifier) if isinstance(verifier, str) else verifier
    models = RoundModels(target, draft, vocab_size, branching)
    law = np.zeros(vocab_size ** (models.depth + 1))
    accepted, trees = 0.0, 0
    for drafted in models.rounds(verifier.scheme, max_trees):
        outcome = verifier.law(drafted.tree, drafted.p, drafted.q)
        joint = outcome.joint
        for node, prefix in enumerate(drafted.prefixes):
            if outcome.stop[node] > 0.0:
                branch = joint[node][:, None] * models.next_then_target(prefix)
                law[models.block(prefix)] += drafted.probability * branch.ravel()
        accepted += drafted.probability * outcome.expected_accepted(drafted.tree)
        trees += 1
    reference = models.target_law()
    error = np.abs(law - reference)
    return RoundExactLaw(law=law, target=reference, max_error=float(error.max()), tv=0.5 * float(error.sum()),
                         expected_accepted=accepted, trees=trees)
