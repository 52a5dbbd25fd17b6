"""Samplers for per-request parameters in mixed batches (``resispec.audit.sampler.row_parameters``), written here
from the public descriptions of the bugs, on ``toy_samplers.processed_chain`` (sps along a chain on NumPy logits):

- ``first_row_chain``: every row's target rows processed with row 0's ``fields`` (claims' names; ``"history"``: row
  0's ids generated before, for the draft's rows too), the rest its own: parameters taken from the wrong request of
  a batch (the class of NVIDIA/TensorRT-LLM#17599, one state shared by the batch, and PR #12588's review, a per-
  request buffer read at the wrong index); ``fields=()`` is its exact twin;
- ``mask_buffer_chain``: the target rows masked by a grammar bitmask kept per token (one slot per row and position,
  ``(B * (gamma + 1), V)``, as engines keep the bitmask of a speculative batch); ``per_request=True`` reads slot b
  for every position of row b, a per-request index into the per-token buffer, so rows past the first read other
  requests' masks (the class of vllm-project/vllm#44006 / #54437: bitmask rows lost after the first padded slot);
  ``per_request=False`` is its twin;
- ``processed_zoo(name)``: a zoo round verifier (``resispec.audit.sampler.zoo_sampler(name, "chain")``) run on the
  rows each processed under its own claims and history (and the round's earlier drafts): exact whatever the rows
  carry.
"""

from dataclasses import replace

import numpy as np

from resispec.audit.sampler import zoo_sampler
from tests.resispec.audit.toy_samplers import _processed, processed_chain


def first_row_chain(p, q, drafts, history, processing, fields=(), rng=np.random):
    taken = {name: getattr(processing[0], name) for name in fields if name != "history"}
    if "min_tokens" in fields:
        taken["eos"] = processing[0].eos
    target = [replace(row, **taken) for row in processing]  # the target rows' logits processors
    histories = [history[0]] * len(history) if "history" in fields else history
    return processed_chain(p, q, drafts, histories, processing, verified=target, bonus=target, rng=rng)


def mask_buffer_chain(p, q, drafts, history, processing, per_request=False, rng=np.random):
    slots, vocab = drafts.shape[1] + 1, p.shape[-1]
    buffer = np.ones((drafts.shape[0] * slots, vocab), dtype=bool)  # one bitmask row per token of the batch
    for b, claims in enumerate(processing):
        if claims.allowed is not None:
            buffer[b * slots:(b + 1) * slots] = np.isin(np.arange(vocab), claims.allowed)
    read = [buffer[b] if per_request else buffer[b * slots] for b in range(drafts.shape[0])]
    masked = [replace(claims, allowed=tuple(int(t) for t in np.flatnonzero(mask)))
              for claims, mask in zip(processing, read)]
    return processed_chain(p, q, drafts, history, processing, verified=masked, bonus=masked, rng=rng)


def processed_zoo(name):
    verify = zoo_sampler(name, "chain")

    def sampler(p, q, drafts, history, processing):
        target, draft = np.empty_like(p), np.empty_like(q)
        for b, claims in enumerate(processing):
            for i in range(p.shape[1]):
                seen = tuple(history[b]) + tuple(int(x) for x in drafts[b, :i])
                target[b, i] = _processed(p[b, i], claims, seen)
                if i < q.shape[1]:
                    draft[b, i] = _processed(q[b, i], claims, seen)
        return verify(target, draft, drafts)
    return sampler
