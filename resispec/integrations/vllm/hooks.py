"""The audit hooks: every token vLLM's V1 model runner emits, scored against the processed target row it was
sampled or verified with (``rows``), into the token log (``recorder``).

Three methods of vLLM's Python layer are wrapped (the same classes run on its CPU and GPU builds):

- ``GPUModelRunner._sample(logits, spec_decode_metadata)`` (the CPU runner inherits it): one engine step. Around
  it a capture slot is open; afterwards the step's emitted tokens are read from its ``SamplerOutput``
  (``sampled_token_ids`` (B, max_spec_len + 1), ``-1`` padded) and scored;
- ``Sampler.sample(logits (B, V), metadata)``: the rows plain sampling (and the bonus token of a speculative
  step) draws from, after vLLM's logits processors, before temperature;
- ``rejection_sampler.apply_sampling_constraints(logits (num_draft_tokens, V), ...)``: the target rows the drafts
  are verified against, at the same point.

For request ``b`` with ``n_b`` drafts, its ``j``-th emitted token is scored under target row ``j`` (an accepted
draft if it equals draft ``j``, else the recovered token) for ``j < n_b``, and under its bonus row for
``j = n_b``; a request without drafts in the step (or any request of a step without speculation) emits a
``plain`` token. Requests vLLM discards in the step (a partial prefill) emit nothing and are not scored.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
import torch

from resispec.integrations.vllm.recorder import Recorder
from resispec.integrations.vllm.rows import buffer, request_processing, score, staged


@dataclass
class Capture:
    """The rows seen inside one ``_sample`` call: ``sampler_rows`` (B, V), ``target_rows`` (num_draft_tokens, V)."""

    sampler_rows: torch.Tensor | None = None
    target_rows: torch.Tensor | None = None


_active = threading.local()
_enabled = [True]
_spent = [0.0]


def hook_seconds() -> float:
    """Seconds this process has spent inside the hooks (copying rows, scoring, logging) since it started."""
    return _spent[0]


def set_enabled(enabled: bool) -> None:
    """Switch the installed hooks on or off in this process (the interleaved overhead benchmark)."""
    _enabled[0] = enabled


def _capture() -> Capture | None:
    return getattr(_active, "capture", None)


def request_params(processing, seeded: bool, penalties: bool) -> str:
    """A digest of a request's sampling parameters (readable; equal parameters, equal digest)."""
    return ", ".join([processing.describe()] + (["penalties"] if penalties else [])
                     + ["seeded" if seeded else "unseeded"])


def emitted_rows(output: np.ndarray, num_draft: list[int] | None, drafts: np.ndarray | None,
                 discard: np.ndarray) -> list[tuple[int, int, int, int, str]]:
    """``(request, j, row, token, kind)`` per emitted token (module doc). ``row`` indexes the step's rows: target
    rows first (num_draft_tokens of them), then the sampler's rows (one per request). output (B, W) int."""
    offset = 0 if num_draft is None else int(sum(num_draft))
    starts = np.zeros(len(output), dtype=np.int64) if num_draft is None else np.cumsum([0] + num_draft[:-1])
    emitted = []
    for b, tokens in enumerate(output):
        if discard[b]:
            continue
        n_b = 0 if num_draft is None else num_draft[b]
        for j, token in enumerate(int(t) for t in tokens):
            if token < 0:
                break
            if j < n_b:
                row = int(starts[b]) + j
                kind = "accepted" if token == int(drafts[row]) else "recovered"
            else:
                row, kind = offset + b, "bonus" if n_b else "plain"
            emitted.append((b, j, row, token, kind))
    return emitted


def selected_rows(target: torch.Tensor | None, sampler: torch.Tensor, rows: list[int]) -> torch.Tensor:
    """Rows ``rows`` of the step's rows (target rows first, then the sampler's: ``emitted_rows``), on the CPU, in
    the emitted tokens' order; only those rows are gathered. target (T, V) or None, sampler (B, V)."""
    offset = 0 if target is None else target.shape[0]
    out = buffer("selected", len(rows), sampler.shape[1], sampler.dtype, torch.device("cpu"))
    for source, chosen in ((target, [i for i, row in enumerate(rows) if row < offset]),
                           (sampler, [i for i, row in enumerate(rows) if row >= offset])):
        if chosen:
            index = torch.tensor([rows[i] - (0 if source is target else offset) for i in chosen])
            out[torch.tensor(chosen)] = source.index_select(0, index.to(source.device)).cpu()
    return out


def record_step(runner, spec_metadata, capture: Capture, output, recorder: Recorder) -> None:
    """Score and record the tokens of one ``_sample`` call (module doc)."""
    batch = runner.input_batch
    count = batch.num_reqs
    metadata = batch.sampling_metadata
    tokens = output.sampled_token_ids.detach().cpu().numpy()[:count]
    discard = np.asarray(runner.discard_request_mask.np[:count], dtype=bool)
    num_draft = None if spec_metadata is None else list(spec_metadata.num_draft_tokens)
    drafts = None if spec_metadata is None else spec_metadata.draft_token_ids.detach().cpu().numpy()
    target = capture.target_rows if spec_metadata is not None else None
    vocab = capture.sampler_rows.shape[1]
    emitted = [e for e in emitted_rows(tokens, num_draft, drafts, discard) if e[3] < vocab]
    if not emitted:
        return

    def values(tensor: torch.Tensor | None) -> list | None:
        return None if tensor is None else tensor.detach().cpu().tolist()

    temperature, top_k, top_p = values(metadata.temperature), values(metadata.top_k), values(metadata.top_p)
    processing = {b: request_processing(None if temperature is None else temperature[b],
                                        None if top_k is None else top_k[b], None if top_p is None else top_p[b],
                                        vocab) for b in {e[0] for e in emitted}}
    pit, p = score(selected_rows(target, capture.sampler_rows, [e[2] for e in emitted]),
                   torch.tensor([e[3] for e in emitted]), torch.from_numpy(recorder.uniforms(len(emitted))),
                   [processing[e[0]] for e in emitted])
    params = {b: request_params(processing[b], b in metadata.generators, not metadata.no_penalties)
              for b in processing}
    req_ids, base = batch.req_ids, batch.num_tokens_no_spec
    recorder.add({
        "request_id": [str(req_ids[e[0]]) for e in emitted],
        "position": [int(base[e[0]]) + e[1] for e in emitted],
        "draft_position": [e[1] if e[4] != "plain" else -1 for e in emitted],
        "kind": [e[4] for e in emitted],
        "accepted": [e[4] == "accepted" for e in emitted],
        "token": [e[3] for e in emitted],
        "p": p.tolist(),
        "pit": pit.tolist(),
        "batch_size": [count] * len(emitted),
        "params": [params[e[0]] for e in emitted],
        "step": [recorder.step] * len(emitted),
    })


def install(recorder: Recorder) -> None:
    """Wrap the three methods (module doc); idempotent per process."""
    from vllm.v1.sample import rejection_sampler
    from vllm.v1.sample.sampler import Sampler
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    if getattr(GPUModelRunner._sample, "_resispec_hook", False):
        return
    sample, constraints, step = Sampler.sample, rejection_sampler.apply_sampling_constraints, GPUModelRunner._sample

    def hooked_sample(self, logits, sampling_metadata, *args, **kwargs):
        capture = _capture()
        if capture is not None and capture.sampler_rows is None:
            start = time.perf_counter()
            capture.sampler_rows = staged("sampler", logits.detach())
            _spent[0] += time.perf_counter() - start
        return sample(self, logits, sampling_metadata, *args, **kwargs)

    def hooked_constraints(logits, *args, **kwargs):
        capture = _capture()
        if capture is not None:
            start = time.perf_counter()
            capture.target_rows = staged("target", logits.detach())
            _spent[0] += time.perf_counter() - start
        return constraints(logits, *args, **kwargs)

    def hooked_step(self, logits, spec_decode_metadata):
        if not _enabled[0]:
            return step(self, logits, spec_decode_metadata)
        capture = _active.capture = Capture()
        try:
            output = step(self, logits, spec_decode_metadata)
        finally:
            _active.capture = None
        if capture.sampler_rows is not None:
            start = time.perf_counter()
            record_step(self, spec_decode_metadata, capture, output, recorder)
            _spent[0] += time.perf_counter() - start
        return output

    hooked_step._resispec_hook = True
    Sampler.sample = hooked_sample
    rejection_sampler.apply_sampling_constraints = hooked_constraints
    GPUModelRunner._sample = hooked_step
