"""Sampling audit of a round verifier over given small models: draft, verify, continue, test.

For verifiers bound to a model pair (``resispec.sequence.round_lp_verifier``, whose plan needs the models at
every prefix, so the sampler audit's own model families cannot drive it). Each of ``samples`` rounds drafts a
tree node by node from the draft model with the verifier's drafting scheme (``DraftingScheme.draft``, breadth
first, children of ``branching``), verifies it with fresh uniforms, and continues the emitted tokens by target
sampling to D + 1 tokens (``resispec.audit.sampler.statistics.continue_sequences``). An exact verifier makes
the sequences distributed as the target's ``T(s)``: tested over the ``V^(D+1)`` cells (``audit_counts``) and
per prefix (``prefix_chi_square``), each at ``alpha / 2`` (Bonferroni).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from resispec.audit.counts import audit_counts
from resispec.audit.result import AuditResult
from resispec.audit.sampler.statistics import continue_sequences, prefix_chi_square, sequence_codes
from resispec.sequence import RoundVerifier
from resispec.sequence.enumeration import Conditional, RoundModels
from resispec.sequence.tree import round_tree


def sample_round(verifier: RoundVerifier, models: RoundModels, rng: np.random.Generator) -> np.ndarray:
    """One drafted and verified round: the emitted tokens (accepted path, then one more), -1 padded to D + 1."""
    parents = models.parents
    tokens, prefixes = np.zeros(parents.size, dtype=np.int64), [()] * parents.size
    for node in range(parents.size):
        children = np.flatnonzero(parents == node)
        if children.size:
            drawn = verifier.scheme.draft(models.draft(prefixes[node]), children.size, rng)
            for child, token in zip(children, drawn):
                tokens[child], prefixes[child] = token, (*prefixes[node], int(token))
    tree = round_tree(parents, tokens, models.vocab_size)
    p = np.stack([models.target(prefix) for prefix in prefixes])
    q = np.stack([models.draft(prefixes[n]) for n in range(tree.num_internal)])
    node, token = verifier.verify(tree, p, q, rng.random(verifier.uniforms_needed(tree)))
    out = np.full(models.depth + 1, -1, dtype=np.int64)
    out[:tree.depths[node] + 1] = [*prefixes[node], token]
    return out


def round_sampling_audit(verifier: RoundVerifier, target: Conditional, draft: Conditional, vocab_size: int,
                         branching: Sequence[int], samples: int, seed: int, alpha: float = 0.01
                         ) -> list[AuditResult]:
    """The cell test and the per-prefix test of ``samples`` rounds (module doc), seeded by ``seed``."""
    if samples < 1:
        raise ValueError(f"samples: expected a positive count, got {samples}")
    models = RoundModels(target, draft, vocab_size, branching)
    rng = np.random.default_rng(seed)
    emitted = np.stack([sample_round(verifier, models, rng) for _ in range(samples)])
    sequences = continue_sequences(emitted, models.target, rng)
    counts = np.bincount(sequence_codes(sequences, vocab_size), minlength=vocab_size ** (models.depth + 1))
    return [audit_counts(counts, models.target_law(), alpha / 2, test=f"{verifier.name}: sequence law (cells)"),
            prefix_chi_square(sequences, models.target, alpha / 2, test=f"{verifier.name}: sequence law (by prefix)")]
