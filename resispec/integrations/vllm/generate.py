"""``python -m resispec.integrations.vllm.generate``: decode a fixed workload with vLLM's offline ``LLM`` in this
(vLLM's) environment, with whatever the plugin's settings switch on, and print one JSON line of what it did.

The workload: ``--requests`` prompts (``PROMPTS``, cycled, each with its index so no two are equal), each decoded
to ``--max-tokens`` tokens at ``--temperature``; ``--spec ngram`` speculates ``--gamma`` tokens with vLLM's ngram
proposer, ``--spec draft --draft DIR`` with a draft model, ``--spec none`` samples plainly. The JSON: tokens,
seconds of ``generate`` (model load excluded), tokens/s, and for speculation vLLM's own counters (drafts, draft
tokens, accepted tokens) and accepted tokens per step (``1 + accepted / drafts``). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

PROMPTS = (
    "List the days of the week, then list them again in the same order:",
    "Count from one to twenty in words: one, two, three,",
    "Write the alphabet with commas: a, b, c, d,",
    "Repeat this sentence three times. The quick brown fox jumps over the lazy dog.",
    "Here is a Python function that prints the numbers from 1 to 10:\n\ndef count():\n",
    "The colours of the rainbow are red, orange, yellow, green, blue, indigo and violet. Again:",
    "Q: What is the capital of France?\nA: Paris.\nQ: What is the capital of Spain?\nA:",
    "Months of the year: January, February, March,",
)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m resispec.integrations.vllm.generate", description=__doc__)
    parser.add_argument("--model", required=True, help="a local checkpoint folder")
    parser.add_argument("--spec", choices=("ngram", "draft", "none"), default="ngram")
    parser.add_argument("--draft", help="draft checkpoint folder (--spec draft)")
    parser.add_argument("--gamma", type=int, default=4, help="speculative tokens per step (default: 4)")
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0, help="vLLM's seed (default: 0)")
    parser.add_argument("--seeded", action="store_true", help="give every other request its own seed")
    args = parser.parse_args(argv)
    if args.spec == "draft" and not args.draft:
        parser.error("--spec draft: needs --draft DIR")
    return args


def counters(llm) -> dict[str, float]:
    """vLLM's speculative-decoding counters (0 where absent)."""
    wanted = {"vllm:spec_decode_num_drafts": "drafts", "vllm:spec_decode_num_draft_tokens": "draft_tokens",
              "vllm:spec_decode_num_accepted_tokens": "accepted_tokens"}
    found = {name: 0.0 for name in wanted.values()}
    for metric in llm.get_metrics():
        if metric.name in wanted:
            found[wanted[metric.name]] += float(getattr(metric, "value", 0.0))
    return found


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    from vllm import LLM, SamplingParams

    speculative = None
    if args.spec == "ngram":
        speculative = {"method": "ngram", "num_speculative_tokens": args.gamma, "prompt_lookup_max": 3,
                       "prompt_lookup_min": 1}
    elif args.spec == "draft":
        speculative = {"method": "draft_model", "model": args.draft, "num_speculative_tokens": args.gamma}
    start = time.perf_counter()
    llm = LLM(model=args.model, dtype="float32", max_model_len=1024, seed=args.seed, enforce_eager=True,
              speculative_config=speculative, disable_log_stats=False)
    print(f"generate: model loaded in {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    prompts = [f"{PROMPTS[i % len(PROMPTS)]} ({i})" if i >= len(PROMPTS) else PROMPTS[i]
               for i in range(args.requests)]
    params = [SamplingParams(temperature=args.temperature, max_tokens=args.max_tokens, ignore_eos=True,
                             seed=(1000 + i) if args.seeded and i % 2 else None) for i in range(args.requests)]
    start = time.perf_counter()
    outputs = llm.generate(prompts, params)
    seconds = time.perf_counter() - start
    tokens = sum(len(output.outputs[0].token_ids) for output in outputs)
    report = {"spec": args.spec, "requests": args.requests, "tokens": tokens, "seconds": seconds,
              "tokens_per_s": tokens / seconds}
    if speculative is not None:
        report.update(counters(llm))
        report["tokens_per_step"] = 1 + report["accepted_tokens"] / report["drafts"] if report["drafts"] else None
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
