"""The claimed rule's exact acceptance, the reference of the audit's acceptance tests.

- node: ``P(the emitted token is one of the candidates) = sum_x P(x) sum_{y in x} law(y | x)`` over every
  candidate tuple ``x`` of the drafting scheme, from the rule's exact conditional laws (``bind``);
- chain, tree: the law of the accepted depth, ``P(depth = d) = sum_trees P(tree) sum_{n: depth(n) = d} stop[n]``
  over every drafted tree of the processed models (``RoundModels.rounds``), from the round verifier's exact
  ``RoundLaw`` (a zoo name verifies node by node, ``resispec.sequence.get_round_verifier``).

``None`` where the enumeration would pass its limit (the test is then reported as not run).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from resispec.audit.sampler.models import ChainModel
from resispec.limits import MAX_TUPLES
from resispec.sequence import get_round_verifier
from resispec.sequence.enumeration import MAX_TREES
from resispec.verifiers import get_verifier


def candidate_share(rule: str, p: np.ndarray, q: np.ndarray, k: int) -> float | None:
    """Exact ``P(token in candidates)`` of the zoo rule ``rule`` at ``(p, q, k)`` (module doc)."""
    verifier = get_verifier(rule)
    if verifier.scheme.tuple_count(q, k) > MAX_TUPLES:
        return None
    bound = verifier.bind(p, q, k)
    tuples = list(verifier.scheme.tuples(bound.q, k))
    candidates = np.array([t for t, _ in tuples], dtype=np.int64).reshape(len(tuples), k)
    chances = np.array([c for _, c in tuples])
    laws, _ = bound.conditional_laws(candidates)
    member = np.zeros_like(laws, dtype=bool)
    member[np.arange(len(tuples))[:, None], candidates] = True
    return float(np.clip(chances @ (laws * member).sum(axis=1), 0.0, 1.0))


def depth_law(rule: str, model: ChainModel, branching: Sequence[int]) -> np.ndarray | None:
    """Exact law (D + 1,) of the accepted depth of one round of ``rule`` over ``model`` (module doc)."""
    verifier = get_round_verifier(rule)
    models = model.round_models(branching)
    if models.tree_count(verifier.scheme) > MAX_TREES:
        return None
    law = np.zeros(len(branching) + 1)
    for drafted in models.rounds(verifier.scheme):
        outcome = verifier.law(drafted.tree, drafted.p, drafted.q)
        np.add.at(law, drafted.tree.depths, drafted.probability * outcome.stop)
    return law / law.sum()
