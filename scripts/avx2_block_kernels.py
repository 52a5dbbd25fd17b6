"""Per-token cost of the native target's block products and head under torch's AVX2 / AVX-512 kernels and this
project's AVX2 kernels (`resispec.engine.model.block_kernels`, docs/avx2_kernels.md), interleaved in one run.

Four configurations, each a child process (``ATEN_CPU_CAPABILITY`` is read when torch loads), run in turn
``--rounds`` times: torch default (AVX-512 here), torch ``avx2``, ours under torch ``avx2`` (the AVX2-only machine's
case) and ours under the default. Each child times, one thread, on the real file's blocks:

- ``products``: the 120 Q4_1 products of one token (30 layers x fused q/k/v, o, gate/up, down; bfloat16 rows of
  ``--rows`` rows), through the kernel that configuration picks;
- ``head q8_0``: the 49152 x 576 Q8_0 head (torch's two-plane int4 head, or ours); ``head float32``: the float32
  table on MKL-packed weights (the head torch's AVX2 configuration used before);
- ``forward`` (``--forward``): a greedy ``ar`` decode of ``--tokens`` tokens with the native target, its target
  seconds per token (the whole one-row forward, products, head and the row glue), and its tokens.

Printed: per configuration the median over rounds of each child's median per token and the fastest call of all
(the least disturbed by other jobs), with date, CPU and load before and after. Usage:
``PYTHONPATH=. python3 scripts/avx2_block_kernels.py [--rounds 3] [--rows 1] [--forward 64]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

CONFIGURATIONS = {"torch AVX-512": ("", "torch"), "torch AVX2": ("avx2", "torch"),
                  "ours, torch AVX2": ("avx2", "avx2"), "ours, torch AVX-512": ("", "avx2")}
"""Name -> (``ATEN_CPU_CAPABILITY``, ``RESISPEC_BLOCK_KERNELS``)."""
PROMPT = "Write a short paragraph about the history of the bicycle."


def seconds(call, repeats: int) -> dict[str, float]:
    """The median and the fastest of ``repeats`` timed calls (after one untimed): the fastest is the least
    disturbed by other jobs on a loaded machine."""
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return {"median": statistics.median(times), "fastest": min(times)}


def child(rows: int, repeats: int, forward_tokens: int) -> dict:
    """One configuration's timings (this process's environment), in seconds per token."""
    import torch

    from resispec.engine.model.block_kernels import block_kernels
    from resispec.engine.model.gguf import target_gguf_path
    from resispec.engine.model.models import target_config
    from resispec.engine.model.native import LINEAR_LAYERS, Q8_0Linear, cached_layers
    from resispec.engine.runtime.compact_lm import bf16_projection
    from resispec.engine.runtime.small_rows import PaddedLinear

    torch.set_num_threads(1)
    config = target_config()
    layers, head = cached_layers(target_gguf_path(), config)
    generator = torch.Generator().manual_seed(0)
    products = []
    for index in range(config.num_hidden_layers):
        for group in (["attn_q", "attn_k", "attn_v"], ["attn_output"], ["ffn_gate", "ffn_up"], ["ffn_down"]):
            parts = [layers[index, name] for name in group if name in LINEAR_LAYERS]
            product = bf16_projection(parts)
            x = torch.randn(rows, parts[0].in_features, generator=generator).to(torch.bfloat16)
            products.append((product, x))
    table = Q8_0Linear.from_levels(head["q"], head["d"]).bound_product()
    x_head = torch.randn(rows, head["q"].shape[1], generator=generator)
    float_head = PaddedLinear(head["q"].float() * head["d"].repeat_interleave(32, dim=1))
    result = {"capability": torch.backends.cpu.get_cpu_capability(), "block_kernels": block_kernels(),
              "products": seconds(lambda: [product(x) for product, x in products], repeats),
              "head q8_0": seconds(lambda: table(x_head.to(torch.bfloat16)), repeats),
              "head float32": seconds(lambda: float_head(x_head), repeats)}
    if forward_tokens:
        result.update(forward(forward_tokens))
    return result


def forward(tokens: int) -> dict:
    """A greedy ``ar`` decode with the native target: target seconds per token and the tokens."""
    import torch

    from resispec.engine.decode.decoding import AUTOREGRESSIVE, Decoder
    from resispec.engine.decode.generation import prompt_ids
    from resispec.engine.decode.processing import Sampling
    from resispec.engine.model.models import load_target

    model, tokenizer = load_target(compute="native")
    ids = prompt_ids(tokenizer, PROMPT, True)
    decoder = Decoder(model, None, AUTOREGRESSIVE, (1,), Sampling(0.0), seed=0)
    out = list(decoder.generate(torch.as_tensor(ids), tokens, tokenizer.eos_token_id))
    stats = decoder.stats
    per_token = stats.target_seconds / max(stats.target_forwards, 1)
    return {"forward": {"median": per_token, "fastest": per_token}, "head": model.native_head,
            "decode tokens/s": stats.tokens / (stats.seconds - stats.prefill_seconds), "tokens": out}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--forward", type=int, default=0, metavar="TOKENS", help="also a greedy ar decode")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.rows, args.repeats, args.forward)))
        return 0
    from resispec.engine.runtime.machine import cpu_description

    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; {cpu_description()}; "
          f"load {os.getloadavg()[0]:.2f}; rows {args.rows}; one thread")
    results: dict[str, list[dict]] = {name: [] for name in CONFIGURATIONS}
    for _ in range(args.rounds):
        for name, (capability, kernels) in CONFIGURATIONS.items():
            env = {**os.environ, "RESISPEC_BLOCK_KERNELS": kernels, "OMP_NUM_THREADS": "1"}
            env.pop("ATEN_CPU_CAPABILITY", None)
            if capability:
                env["ATEN_CPU_CAPABILITY"] = capability
            run = subprocess.run([sys.executable, __file__, "--child", "--rows", str(args.rows), "--repeats",
                                  str(args.repeats), "--forward", str(args.forward)],
                                 env=env, capture_output=True, text=True, check=True)
            results[name].append(json.loads(run.stdout.strip().splitlines()[-1]))
    keys = ["products", "head q8_0", "head float32"] + (["forward"] if args.forward else [])
    print(f"{'configuration':22} {'torch':8} {'kernels':8} " + " ".join(f"{key + ' ms':>20}" for key in keys)
          + ("  decode tokens/s" if args.forward else "") + "\n" + " " * 40
          + " ".join(f"{'median / fastest':>20}" for _ in keys))
    for name, runs in results.items():
        cells = " ".join(f"{statistics.median(run[key]['median'] for run in runs) * 1e3:11.2f} / "
                         f"{min(run[key]['fastest'] for run in runs) * 1e3:6.2f}" for key in keys)
        rate = f"  {statistics.median(run['decode tokens/s'] for run in runs):16.1f}" if args.forward else ""
        print(f"{name:22} {runs[0]['capability']:8} {runs[0]['block_kernels']:8} {cells}{rate}")
    if args.forward:
        reference = results["torch AVX-512"][0]["tokens"]
        for name, runs in results.items():
            tokens = runs[0]["tokens"]
            same = next((i for i, (a, b) in enumerate(zip(tokens, reference)) if a != b), min(len(tokens),
                                                                                           len(reference)))
            print(f"greedy tokens of {name} (head {runs[0]['head']}): the first {same} of {len(reference)} equal "
                  "torch AVX-512's")
    print(f"load after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
