"""``python -m resispec.integrations.vllm.generate``: decode a fixed workload with vLLM's offline ``LLM`` in this
(vLLM's) environment, with whatever the plugin's settings switch on, and print one JSON line of what it did.

The workload (``workload``): ``--requests`` prompts (``PROMPTS``, cycled, each numbered so no two are equal),
each decoded to ``--max-tokens`` tokens (EOS ignored) at ``--temperature``; ``--seeded`` gives every other
request its own seed. ``--spec ngram`` speculates ``--gamma`` tokens with vLLM's ngram proposer, ``--spec draft
--draft DIR`` with a draft model, ``--spec none`` samples plainly. The JSON (``run_workload``): tokens, seconds of
``generate`` (model load excluded), tokens/s, and with speculation vLLM's own counters (drafts, draft tokens,
accepted tokens) and tokens per step (``1 + accepted / drafts``: the tokens one verification emits).
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


def parser(prog: str, description: str | None) -> argparse.ArgumentParser:
    """The workload's options (module doc), shared with the benchmark."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--model", required=True, help="a local checkpoint folder")
    parser.add_argument("--spec", choices=("ngram", "draft", "none"), default="ngram")
    parser.add_argument("--draft", help="draft checkpoint folder (--spec draft)")
    parser.add_argument("--gamma", type=int, default=4, help="speculative tokens per step (default: 4)")
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0, help="vLLM's seed (default: 0)")
    parser.add_argument("--seeded", action="store_true", help="give every other request its own seed")
    return parser


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    if args.spec == "draft" and not args.draft:
        parser.error("--spec draft: needs --draft DIR")
    return args


def make_llm(args: argparse.Namespace):
    """vLLM's ``LLM`` for the workload (float32, eager, vLLM's usual processes)."""
    from vllm import LLM

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
    return llm


def workload(args: argparse.Namespace) -> tuple[list[str], list]:
    """The prompts and their sampling parameters (module doc)."""
    from vllm import SamplingParams

    prompts = [PROMPTS[i % len(PROMPTS)] + (f" ({i})" if i >= len(PROMPTS) else "") for i in range(args.requests)]
    params = [SamplingParams(temperature=args.temperature, max_tokens=args.max_tokens, ignore_eos=True,
                             seed=(1000 + i) if args.seeded and i % 2 else None) for i in range(args.requests)]
    return prompts, params


def counters(llm) -> dict[str, float]:
    """vLLM's speculative-decoding counters so far (0 where absent)."""
    wanted = {"vllm:spec_decode_num_drafts": "drafts", "vllm:spec_decode_num_draft_tokens": "draft_tokens",
              "vllm:spec_decode_num_accepted_tokens": "accepted_tokens"}
    found = {name: 0.0 for name in wanted.values()}
    for metric in llm.get_metrics():
        if metric.name in wanted:
            found[wanted[metric.name]] += float(getattr(metric, "value", 0.0))
    return found


def run_workload(llm, args: argparse.Namespace) -> dict:
    """Generate the workload once; the JSON record of module doc."""
    prompts, params = workload(args)
    before = counters(llm)
    start = time.perf_counter()
    outputs = llm.generate(prompts, params, use_tqdm=False)
    seconds = time.perf_counter() - start
    tokens = sum(len(output.outputs[0].token_ids) for output in outputs)
    report = {"spec": args.spec, "requests": args.requests, "tokens": tokens, "seconds": seconds,
              "tokens_per_s": tokens / seconds}
    if args.spec != "none":
        after = counters(llm)
        report.update({name: after[name] - before[name] for name in after})
        report["tokens_per_step"] = 1 + report["accepted_tokens"] / report["drafts"] if report["drafts"] else None
    return report


def main(argv: list[str] | None = None) -> int:
    options = parser("python -m resispec.integrations.vllm.generate", __doc__)
    args = check(options, options.parse_args(argv))
    llm = make_llm(args)
    print(json.dumps(run_workload(llm, args)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
