"""transformers' installed ``_speculative_sampling`` as samplers of the contract (the adapters docs/audit_sampler.md
shows): torch float32 logits in, one call of the real function per row (it takes one sequence at a time)."""

import torch
from transformers.generation.utils import _speculative_sampling


def hf_chain(p, q, drafts, weight=None):  # p (B, gamma + 1, V), q (B, gamma, V) logits; drafts (B, gamma)
    out = torch.full((drafts.shape[0], drafts.shape[1] + 1), -1)
    for b in range(drafts.shape[0]):
        tokens, _ = _speculative_sampling(drafts[b:b + 1], q[b:b + 1], drafts.shape[1], p[b:b + 1],
                                          assistant_ensemble_weight=weight)
        out[b, :tokens.shape[1]] = tokens[0]
    return out


def hf_node(p, q, candidates, weight=None):  # p, q (B, V) logits; candidates (B, 1): a chain of one, bonus row p
    return hf_chain(torch.stack([p, p], dim=1), q[:, None], candidates, weight)[:, 0]


def hf_ensemble_chain(p, q, drafts):
    return hf_chain(p, q, drafts, weight=0.5)


def hf_ensemble_node(p, q, candidates):
    return hf_node(p, q, candidates, weight=0.5)


def hf_tree(p, q, paths):  # a tree of one path (branching 1,...,1): p (B, 1, D + 1, V), q (B, 1, D, V), paths (B, 1, D)
    return hf_chain(p[:, 0], q[:, 0], paths[:, 0])
