"""Measure the numerics ``audit-stream`` must tolerate in served logprobs (``LOGPROB_TOLERANCE`` in
resispec/engine/audit/served_logprobs.py, docs/audit_stream.md "Served logprobs").

The same file computed two ways (`resispec.engine.model.models`): float32 (the dequantized weights, the audit's
target) and native (the GGUF's 4-bit blocks with integer kernels, what the engine serves by default,
`fastest_target_compute`). On held-out benchmark prompts (``engine/data/bench_prompts.json``, never used for
tuning) a continuation of ``--tokens`` tokens is sampled from the float32 target at T = 1 (seeded); both computations
then teacher-force ``prompt + continuation`` and give ``log p(y_t)`` of every emitted token from their raw logits.
Printed: the distribution of ``|log p_float32(y_t) - log p_native(y_t)|`` over all emitted tokens (median, 99th,
99.9th percentile, max), with date, CPU extensions and load. Usage:
``PYTHONPATH=. python3 scripts/served_logprob_tolerance.py [--prompts 6] [--tokens 128] [--seed 0] [--threads 1]``
(about 3 minutes on 2 cores at load 1).
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys

import numpy as np
import torch

from resispec.engine.data.prompts import Prompt, encode_prompts, load_bench_prompts
from resispec.engine.model.models import fastest_target_compute, load_target, with_compute
from resispec.engine.runtime.machine import cpu_description


def sampled_continuation(model, prompt_ids: torch.Tensor, tokens: int, generator: torch.Generator) -> torch.Tensor:
    """``tokens`` ids drawn from ``model``'s raw softmax at T = 1 after ``prompt_ids`` (long [T]): long [tokens]."""
    ids = prompt_ids[None]
    past, step = None, ids
    drawn = []
    for _ in range(tokens):
        out = model(input_ids=step, past_key_values=past, use_cache=True)
        past = out.past_key_values
        probs = torch.softmax(out.logits[0, -1].double(), dim=-1)
        step = torch.multinomial(probs, 1, generator=generator)[None]
        drawn.append(int(step))
    return torch.tensor(drawn, dtype=torch.long)


def emitted_logprobs(model, prompt_ids: torch.Tensor, continuation: torch.Tensor) -> np.ndarray:
    """``log p(y_t | prompt, y_<t)`` of every continuation token from ``model``'s raw logits, teacher-forced in one
    forward: float64 [len(continuation)]."""
    ids = torch.cat([prompt_ids, continuation])[None]
    logits = model(input_ids=ids).logits[0, len(prompt_ids) - 1: -1].double()
    return torch.log_softmax(logits, dim=-1).gather(1, continuation[:, None])[:, 0].numpy()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=6, help="held-out prompts (there are 6)")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (more spin-wait on a loaded machine)")
    args = parser.parse_args(argv)
    torch.set_grad_enabled(False)
    torch.set_num_threads(args.threads)
    model, tokenizer = load_target()
    native = with_compute(model, "native")
    texts = load_bench_prompts()[: args.prompts]
    prompts = encode_prompts(tokenizer, [Prompt("bench", "heldout", text) for text in texts])
    generator = torch.Generator().manual_seed(args.seed)
    gaps = []
    for index, prompt_ids in enumerate(prompts):
        continuation = sampled_continuation(model, prompt_ids, args.tokens, generator)
        gap = np.abs(emitted_logprobs(model, prompt_ids, continuation) - emitted_logprobs(native, prompt_ids,
                                                                                         continuation))
        gaps.append(gap)
        print(f"prompt {index + 1}/{len(prompts)}: max {gap.max():.4f} nats over {gap.size} tokens",
              file=sys.stderr, flush=True)
    gap = np.concatenate(gaps)
    median, p99, p999 = np.percentile(gap, [50, 99, 99.9])
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; CPU: {cpu_description()}; "
          f"native head {native.native_head}; default compute {fastest_target_compute()}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"|log p_float32(y_t) - log p_native(y_t)| over {gap.size} tokens sampled at T = 1 "
          f"({len(prompts)} held-out prompts x {args.tokens}, seed {args.seed}): median {median:.4f}, "
          f"99th {p99:.4f}, 99.9th {p999:.4f}, max {gap.max():.4f} nats")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
