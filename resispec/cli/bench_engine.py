"""``resispec bench engine``: tokens per target forward and speedup over autoregressive sampling."""

from __future__ import annotations

import argparse
import json
import sys

from resispec.cli.generate import parse_tree
from resispec.cli.model_options import add_target_argument, usage_errors


def register(bench_subparsers: argparse._SubParsersAction) -> None:
    parser = bench_subparsers.add_parser("engine", help="speculative vs autoregressive decoding on a fixed prompt set")
    parser.add_argument("--verifier", nargs="+", default=None, help="verifiers (default: every exact one)")
    parser.add_argument("--draft", default=None, help="draft name or checkpoint PATH (default: the engine's default draft)")
    add_target_argument(parser)
    parser.add_argument("--tree", type=parse_tree, default=(4, 2, 2, 1), help="branching per depth")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--prompts", type=int, default=None, help="use only the first N prompts")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(handler=usage_errors("bench engine")(run))


def run(args: argparse.Namespace) -> int:
    import torch

    from engine.bench_engine import bench_engine, load_prompts
    from engine.drafts.registry import DEFAULT_DRAFT
    from engine.models import load_target
    from engine.processing import Sampling
    from resispec.cli.table import format_table
    from resispec.verifiers import VERIFIERS

    torch.set_num_threads(args.threads)
    verifiers = args.verifier or [name for name, cls in VERIFIERS.items()
                                  if cls.claims_exact and (cls.max_k is None or cls.max_k >= max(args.tree))]
    model, tokenizer = load_target(device=args.device, path=args.target)
    prompts = load_prompts()[: args.prompts]
    rows = bench_engine(model, tokenizer, verifiers, args.draft or DEFAULT_DRAFT, args.tree, args.max_new_tokens,
                        Sampling(args.temperature), args.seed, prompts,
                        progress=lambda line: print(line, file=sys.stderr, flush=True))
    if args.json:
        print(json.dumps({"draft": args.draft or DEFAULT_DRAFT, "tree": list(args.tree), "prompts": len(prompts),
                          "rows": [row.to_dict() for row in rows]}, indent=2))
        return 0
    print(format_table(
        ["verifier", "tokens", "target forwards", "tokens / forward", "tokens / s", "speedup vs ar"],
        [[r.verifier, r.tokens, r.target_forwards, f"{r.accepted_per_forward:.3f}", f"{r.tokens_per_second:.2f}",
          f"{r.speedup:.2f}x"] for r in rows]))
    print(f"\ndraft {args.draft or DEFAULT_DRAFT}, tree {','.join(map(str, args.tree))}, {len(prompts)} prompts x "
          f"{args.max_new_tokens} new tokens, T = {args.temperature}, {args.threads} threads; all from one run.")
    return 0
