"""A rejection sampler in vLLM's layout, written here for the glue measurement (not vLLM's code): drafts flattened
with per-request counts, draft *probabilities* and target *logits* of the draft positions (``(N, V)``, N the total
drafts), bonus tokens drawn by the caller (``(B, 1)``), per-request generators as ``{row: torch.Generator}``;
returns ``(B, max_spec_len + 1)`` ids padded with -1. Acceptance ``u < p / q``; the recovered token is an exponential
race over the residual ``max(p - q, 0)`` (the residual is never empty after a rejection); unseeded rows draw from
torch's global generator.

``vllm_chain`` is the glue that audits it (``GLUE_LINES`` lines: the measurement of docs/audit_sampler.md).
"""

import torch


def rejection_sample(draft_ids, counts, max_spec_len, draft_probs, target_logits, bonus_ids, generators):
    rows, width = len(counts), max_spec_len + 1
    target = torch.softmax(target_logits.double(), dim=-1)
    draft = draft_probs.double()
    out = torch.full((rows, width), -1, dtype=torch.int64)
    start = 0
    for b, n in enumerate(counts):
        g = generators.get(b)
        for i in range(n):
            x, p, q = int(draft_ids[start + i]), target[start + i], draft[start + i]
            u = torch.rand((), dtype=torch.float64, generator=g)
            if u < p[x] / q[x]:
                out[b, i] = x
                continue
            residual = (p - q).clamp(min=0)
            race = torch.empty_like(residual).exponential_(generator=g)
            out[b, i] = int(torch.where(residual > 0, residual / race, 0.0).argmax())
            break
        else:
            out[b, n] = bonus_ids[b, 0]
        start += n
    return out


def vllm_chain(p, q, drafts, lengths, bonus, generator_map):
    counts = lengths.tolist()
    flat = torch.cat([drafts[b, :n] for b, n in enumerate(counts)])
    target = torch.cat([p[b, :n] for b, n in enumerate(counts)])
    draft = torch.cat([q[b, :n] for b, n in enumerate(counts)])
    return rejection_sample(flat, counts, drafts.shape[1], draft, target, bonus[:, None], generator_map)


GLUE_LINES = 5
"""The lines of ``vllm_chain`` below its ``def`` line."""
