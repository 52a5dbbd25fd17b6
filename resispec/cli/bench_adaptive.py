"""``resispec bench adaptive``: the defaults against ``ar`` while the machine changes
(`resispec.engine.bench.adaptive_bench`)."""

from __future__ import annotations

import argparse
import os
import sys

from resispec.cli.arguments import nonneg_seed, positive_int, temperature, thread_count
from resispec.cli.output import strict_json


def register(bench_subparsers: argparse._SubParsersAction) -> None:
    from resispec.engine.bench.scenarios import SCENARIOS  # torch-free: the parser is built without extras

    parser = bench_subparsers.add_parser(
        "adaptive", help="the defaults vs ar under a load started halfway, from a stale calibration, on repetitive "
                         "text; warm start")
    parser.add_argument("--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    parser.add_argument("--prompts", type=positive_int, default=4, help="held-out prompts per scenario (default 4)")
    parser.add_argument("--max-new-tokens", type=positive_int, default=64)
    parser.add_argument("--repetitive-tokens", type=positive_int, default=128,
                        help="new tokens of the repetitive-text generations (default 128)")
    parser.add_argument("--temperature", type=temperature, default=1.0)
    parser.add_argument("--seed", type=nonneg_seed, default=0)
    parser.add_argument("--threads", type=thread_count, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from resispec.cli.table import format_table
    from resispec.engine.bench.adaptive_bench import (
        MAX_STALE_FACTOR,
        REPEAT_PROMPT,
        STALE_FACTOR,
        STALE_TOKENS,
        Burner,
        interleaved,
        pooled,
        stale_calibration,
        warm_start_seconds,
    )
    from resispec.engine.data.prompts import load_bench_prompts as load_prompts
    from resispec.engine.decode.calibration import choose_tree
    from resispec.engine.decode.generation import GenerationRequest
    from resispec.engine.decode.processing import Sampling
    from resispec.engine.drafts.registry import DEFAULT_DRAFT, make_draft, resolve_draft_name
    from resispec.engine.model.models import fastest_target_compute, load_target
    from resispec.engine.runtime.machine import cpu_description

    torch.set_num_threads(args.threads)
    sampling = Sampling(args.temperature)
    compute = fastest_target_compute("cpu")
    model, tokenizer = load_target(compute=compute)
    prompts = load_prompts()[: args.prompts]

    def say(line: str) -> None:
        print(f"resispec bench adaptive: {line}", file=sys.stderr, flush=True)

    def request(verifier: str = "resispec", draft: str = DEFAULT_DRAFT, tokens: int = args.max_new_tokens):
        return lambda prompt, index: GenerationRequest(prompt=prompt, verifier=verifier, draft=draft, sampling=sampling,
                                                       max_new_tokens=tokens, seed=args.seed + index,
                                                       threads=args.threads)

    results: dict = {"cpu": cpu_description(), "torch": torch.__version__,
                     "capability": torch.backends.cpu.get_cpu_capability(), "threads": args.threads,
                     "target_compute": compute, "temperature": args.temperature, "load_start": list(os.getloadavg())}
    _, calibration, _ = choose_tree(model, tokenizer, lambda: make_draft(DEFAULT_DRAFT, model),
                                    resolve_draft_name(DEFAULT_DRAFT, model), "resispec", sampling, args.threads)
    configurations = {"ar": request("ar"), "defaults": request()}
    if "load" in args.scenarios:
        burner, half = Burner(), len(prompts) // 2

        def on_prompt(index: int) -> None:
            if index == half:
                say("starting the CPU burner (one core) for the second half")
                burner.start()

        try:  # burning from the half on only, stopped whatever happens
            per_prompt = interleaved(model, tokenizer, configurations, prompts, on_prompt=on_prompt, progress=say)
        finally:
            burner.stop()
        halves = {"quiet": pooled(per_prompt[:half]), "loaded": pooled(per_prompt[half:])}
        results["load"] = {part: {name: rate.to_dict() for name, rate in rates.items()}
                           for part, rates in halves.items() if rates}
    if "stale" in args.scenarios:
        factor = STALE_FACTOR
        while stale_calibration(calibration, factor).choose(plain=True).branching == () and factor < MAX_STALE_FACTOR:
            factor *= 2  # stale enough to predict speculation
        stale = stale_calibration(calibration, factor)
        say(f"stale prior: plain costs x{factor:g} -> predicts "
            f"{','.join(map(str, stale.choose(plain=True).branching)) or 'plain'}")
        stale_requests = {"ar": request("ar", tokens=2 * STALE_TOKENS), "defaults": request(tokens=2 * STALE_TOKENS)}
        priors = {"defaults": lambda index: stale_calibration(calibration, factor, generation=index)}
        rates = pooled(interleaved(model, tokenizer, stale_requests, prompts, priors=priors, progress=say))
        results["stale"] = {"prior_shape": list(stale.choose(plain=True).branching), "factor": factor,
                            **{name: rate.to_dict() for name, rate in rates.items()}}
    if "repetitive" in args.scenarios:
        repeat = {"ar": request("ar", tokens=args.repetitive_tokens),
                  "defaults": request(tokens=args.repetitive_tokens),
                  "defaults, ngram draft": request(draft="ngram", tokens=args.repetitive_tokens)}
        rates = pooled(interleaved(model, tokenizer, repeat, [REPEAT_PROMPT] * len(prompts), progress=say))
        results["repetitive"] = {name: rate.to_dict() for name, rate in rates.items()}
    if "warm-start" in args.scenarios:
        say("timing a warm resispec generate (two new processes)")
        results["warm_start_seconds"] = warm_start_seconds(args.threads)
    results["load_end"] = list(os.getloadavg())
    if args.json:
        print(strict_json(results))
        return 0
    rows = []
    for scenario in ("load", "stale", "repetitive"):
        parts = results.get(scenario)
        if parts is None:
            continue
        groups = parts.items() if scenario == "load" else [(scenario, parts)]
        for part, rates in groups:
            base = rates["ar"]["tokens_per_second"]
            for name, rate in rates.items():
                if not isinstance(rate, dict):
                    continue
                shapes = ", ".join(f"{shape} {count}" for shape, count in rate["shapes"].items()) or "-"
                spread = f"{min(rate['per_prompt']):.1f}-{max(rate['per_prompt']):.1f}"
                rows.append([part if scenario == "load" else scenario, name, rate["tokens"],
                             f"{rate['tokens_per_second']:.2f}", f"{rate['decode_tokens_per_second']:.2f}", spread,
                             f"{rate['tokens_per_second'] / base:.3f}x", shapes])
    print(format_table(["scenario", "configuration", "tokens", "tokens / s", "decode only", "per prompt", "vs ar",
                        "tokens by shape"], rows))
    if "stale" in results:
        late = {name: results["stale"][name]["late_tokens_per_second"] for name in ("ar", "defaults")}
        if all(late.values()):
            print(f"\nstale prior, tokens {STALE_TOKENS + 1}-{2 * STALE_TOKENS} of each generation: defaults "
                  f"{late['defaults']:.2f} tokens/s, ar {late['ar']:.2f}: {late['defaults'] / late['ar']:.3f}x")
    if "stale" in results:
        firsts = results["stale"]["defaults"]["first_plain"]
        print(f"stale prior (plain costs x{results['stale']['factor']:g}) predicted "
              f"{','.join(map(str, results['stale']['prior_shape'])) or 'plain'}; first plain token per generation: "
              f"{firsts}")
    if "warm_start_seconds" in results:
        print(f"warm start (a new `resispec generate` process, 8 tokens): {results['warm_start_seconds']:.2f} s")
    print(f"{len(prompts)} held-out prompts, T = {args.temperature}, {args.threads} thread(s), target {compute}; "
          f"CPU: {results['cpu']}; torch {results['torch']} ({results['capability']}); load average "
          f"{results['load_start'][0]:.1f} at the start, {results['load_end'][0]:.1f} at the end.")
    return 0
