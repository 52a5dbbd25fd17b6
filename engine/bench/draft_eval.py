"""Held-out figures of a draft q against the target p: overlap, verifier acceptance, tokens per round.

Pairs (p, q) are taken at target-generated positions (T = 1) of held-out prompts: p from the stored
target state (or the native target's forward along the same text), q from the draft as the engine runs it
(`Draft.prefill`, then one `grow` of the chain).
From the acceptance alpha(k) of a verifier with k candidates per node, the expected tokens emitted per
target forward of a tree with branching (b_1, ..., b_D), if acceptance at each depth were independent
of the others and of the depth, is

    E[tokens] = 1 + sum_{d=1}^{D} prod_{j=1}^{d} alpha(b_j)

(the accepted path plus the token drawn after it). Real text makes acceptances at successive depths
positively correlated, so this tends to underestimate; `resispec bench engine` measures it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from transformers import PreTrainedModel

from resispec import get_verifier
from resispec.engine.decode.calibration import lm_grow, measure_costs
from resispec.engine.decode.decoding import drafts_at
from resispec.engine.drafts.base import Draft
from resispec.engine.runtime.compact_lm import lm_for
from resispec.engine.train.draft_data import Sequences
from resispec.formats.stats import standard_error
from resispec.verifiers.base import Verifier


@torch.no_grad()
def draft_pairs(
    target: PreTrainedModel, draft: Draft, data: Sequences, rows: np.ndarray | None = None,
    p_model: PreTrainedModel | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(p, q, drafts): p and q float64 [n, V] at the target positions `rows` of `data` (indices into its stacked
    target rows, ascending; default: all); ``drafts`` bool [n], whether the draft drafts a round there
    (`resispec.engine.decode.decoding.drafts_at`). p is the stored target's, from its hidden state; with ``p_model``
    (the native target) that model's, teacher-forced along the same text."""
    rows = np.arange(data.num_targets) if rows is None else np.asarray(rows)
    ps, qs, flags, start = [], [], [], 0
    for s in range(len(data.lengths)):
        tokens, prompt_len, hidden = data.sequence(s)
        keep = rows[(rows >= start) & (rows < start + len(hidden))] - start
        start += len(hidden)
        if len(keep) == 0:
            continue
        chain, parents = tokens[prompt_len - 1 :], torch.arange(-1, len(tokens) - prompt_len)
        keep = torch.as_tensor(keep)
        if p_model is None:
            p_logits, states = target.lm_head(hidden[keep]), hidden
        else:
            native = lm_for(p_model)
            p_logits = lm_grow(native, tokens[:prompt_len], chain, parents)[:-1][keep]
            states = native.last_features
        q_logits = lm_grow(draft, tokens[:prompt_len], chain, parents, states)[:-1]
        ps.append(torch.softmax(p_logits.double(), -1))
        qs.append(torch.softmax(q_logits[keep].double(), -1))
        flags += [drafts_at(draft, tokens[: prompt_len + int(t)].tolist()) for t in keep]
    return torch.cat(ps).numpy(), torch.cat(qs).numpy(), np.array(flags, dtype=bool)


def forward_seconds(lm, prompt: torch.Tensor, repeats: int) -> float:
    """Median seconds of one one-row forward of ``lm`` (a draft or the target's `lm_for`) on ``prompt``'s cache."""
    return measure_costs(lm, prompt, (1,), repeats)[1]


def has_closed_form(verifier: Verifier) -> bool:
    """Whether `verifier` computes its acceptance in closed form (not by enumerating candidate tuples)."""
    return type(verifier)._acceptance is not Verifier._acceptance


def mean_acceptance(
    name: str, p: np.ndarray, q: np.ndarray, k: int, draws: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Mean over rows of the probability that verifier `name` accepts one of k candidates, and its
    standard error: exact per row where the verifier has a closed form (error from rows only), else
    Monte Carlo with `draws` drafts and verifications per row."""
    verifier = get_verifier(name)
    if has_closed_form(verifier):
        values = np.array([verifier.acceptance(pi, qi, k) for pi, qi in zip(p, q)])
    else:
        values = np.array([np.mean(verifier.bind(pi, qi, k).draft_and_verify(draws, rng)[1] >= 0)
                           for pi, qi in zip(p, q)])
    return float(values.mean()), standard_error(values)


def tokens_per_round(acceptance: dict[int, float], branching: Sequence[int]) -> float:
    """``1 + sum_d prod_{j <= d} acceptance[b_j]`` (see the module docstring)."""
    total, reach = 1.0, 1.0
    for children in branching:
        reach *= acceptance[children]
        total += reach
    return total
