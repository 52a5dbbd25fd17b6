"""The project's chain verifiers (``block``, ``sps``) in place of vLLM's rejection rule, for V1 chains on any
device (vLLM implements ``rejection_sample_method="block"`` only in its Triton model runner).

``RejectionSampler.forward`` processes the target rows (``apply_sampling_constraints``) and calls the module
function ``rejection_sample(draft_token_ids (T,), num_draft_tokens [B], max_spec_len, cu_num_draft_tokens (B,),
draft_probs (T, V) or None, target_logits (T, V), bonus_token_ids (B, 1), sampling_metadata)``, which returns
(B, max_spec_len + 1) int32, ``-1`` padded. ``install_verifier`` replaces both:

- ``apply_sampling_constraints`` returns the rows as they are (after vLLM's logits processors): the verifier
  applies each request's temperature, top-k and top-p itself with the project's law (``rows.request_processing``,
  ``resispec.processing``), so no expansion kernel stands between a request's parameters and its rows;
- ``rejection_sample`` runs ``resispec.audit.sampler.zoo.zoo_sampler(name, "chain")`` (the round verifier
  ``resispec.sequence.get_round_verifier(name)`` on each request's chain, NumPy float64) on the processed rows,
  with ``q`` the draft model's probabilities or, for a proposer without them (ngram), one-hot at the drafted
  token (the convention of vLLM's own rule). When every draft is accepted, the token after them is the bonus
  token vLLM's sampler already drew from the bonus row (a draw from that row, independent of the round): the
  verifier gets a placeholder row there, and block verification uses the leaf row only for that draw.

Exact for every request (``theory/block.py``); audited through vLLM's own classes by
``resispec audit-sampler vllm:rejection`` with ``RESISPEC_VLLM_VERIFIER=block`` (docs/vllm.md).
"""

from __future__ import annotations

import numpy as np
import torch

from resispec.audit.sampler.zoo import zoo_sampler
from resispec.integrations.vllm.rows import request_processing
from resispec.processing import process_logits


def chain_inputs(num_draft: list[int], drafts: torch.Tensor, draft_probs: torch.Tensor | None,
                 target_logits: torch.Tensor, processings: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(p (B, G + 1, V), q (B, G, V), drafted (B, G))`` in the chain contract, float64, G the longest chain:
    request b's processed target rows, a uniform placeholder at its leaf and past it, its draft laws, its drafts
    then -1."""
    batch, width, vocab = len(num_draft), max(num_draft), target_logits.shape[1]
    p = np.full((batch, width + 1, vocab), 1.0 / vocab)
    q = np.full((batch, width, vocab), 1.0 / vocab)
    drafted = np.full((batch, width), -1, dtype=np.int64)
    start = 0
    for b, n in enumerate(num_draft):
        rows = slice(start, start + n)
        p[b, :n] = process_logits(target_logits[rows].to(torch.float64), processings[b]).cpu().numpy()
        ids = drafts[rows].to(torch.int64).cpu()
        if draft_probs is None:
            q[b, :n] = 0.0
            q[b, np.arange(n), ids.numpy()] = 1.0
        else:
            q[b, :n] = draft_probs[rows].to(torch.float64).cpu().numpy()
        drafted[b, :n] = ids.numpy()
        start += n
    return p, q, drafted


_vllm_rule: dict = {}


def install_verifier(name: str, seed: int = 0) -> None:
    """Replace vLLM's rule by the round verifier ``name`` in this process (module doc); ``"vllm"`` puts vLLM's
    own rule back."""
    from vllm.v1.sample import rejection_sampler

    if not _vllm_rule:
        _vllm_rule.update(apply_sampling_constraints=rejection_sampler.apply_sampling_constraints,
                          rejection_sample=rejection_sampler.rejection_sample)
    if name == "vllm":
        for attribute, function in _vllm_rule.items():
            setattr(rejection_sampler, attribute, function)
        return
    rounds = zoo_sampler(name, "chain", seed=seed)

    def as_they_are(logits, cu_num_draft_tokens, sampling_metadata):
        return logits

    def verify(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens, draft_probs, target_logits,
               bonus_token_ids, sampling_metadata, **unused):
        counts = [int(n) for n in num_draft_tokens]
        out = torch.full((len(counts), max_spec_len + 1), -1, dtype=torch.int32, device=target_logits.device)
        bonus = bonus_token_ids.reshape(-1).cpu()
        vocab = target_logits.shape[1]

        def value(tensor, b):
            return None if tensor is None else tensor[b].item()

        processings = [request_processing(value(sampling_metadata.temperature, b), value(sampling_metadata.top_k, b),
                                          value(sampling_metadata.top_p, b), vocab) for b in range(len(counts))]
        chained = [b for b, n in enumerate(counts) if n > 0]
        for b, n in enumerate(counts):
            if n == 0:
                out[b, 0] = int(bonus[b])
        if chained:
            p, q, drafted = chain_inputs(counts, draft_token_ids, draft_probs, target_logits, processings)
            tokens = rounds(p[chained], q[chained], drafted[chained])
            for row, b in enumerate(chained):
                if tokens[row, counts[b]] >= 0:  # every draft accepted: the token after them is vLLM's bonus draw
                    tokens[row, counts[b]] = int(bonus[b])
                out[b, : counts[b] + 1] = torch.from_numpy(tokens[row, : counts[b] + 1]).to(torch.int32)
        return out

    rejection_sampler.apply_sampling_constraints = as_they_are
    rejection_sampler.rejection_sample = verify
