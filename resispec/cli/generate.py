"""``resispec generate``: decode with the real target, speculatively or autoregressively."""

from __future__ import annotations

import argparse
import json
import sys


def parse_tree(text: str) -> tuple[int, ...]:
    """``"4,2,2,1"`` -> (4, 2, 2, 1)."""
    try:
        branching = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--tree: expected comma-separated integers like 4,2,2,1, got {text!r}")
    if not branching or min(branching) < 1:
        raise argparse.ArgumentTypeError(f"--tree: every branching must be >= 1, got {text!r}")
    return branching


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("generate", help="generate text with SmolLM2-135M-Instruct and a verifier")
    parser.add_argument("--prompt", required=True, help="the user message (chat template applied)")
    parser.add_argument("--verifier", default="resispec", help="a verifier name (zoo; block, traversal, traversal_wor: sequence-level), or 'ar' for plain sampling")
    parser.add_argument("--draft", default=None, help="draft model (default: the engine's default draft)")
    parser.add_argument("--tree", type=parse_tree, default=(4, 2, 2, 1), help="branching per depth, e.g. 4,2,2,1")
    parser.add_argument("--temperature", type=float, default=1.0, help="0 = greedy")
    parser.add_argument("--top-k", type=int, default=None)
    parser.add_argument("--top-p", type=float, default=None)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--audit", action="store_true", help="randomized-PIT audit of every emitted token")
    parser.add_argument("--log", default=None, metavar="FILE",
                        help="write (p, q, candidates, emitted) of every verified node as a logged-pairs .npz")
    parser.add_argument("--log-keep", type=int, default=256, metavar="N", help="token ids kept per logged row")
    parser.add_argument("--parity", type=float, default=0.0, metavar="FRACTION",
                        help="re-decide this fraction of nodes with the NumPy reference and count disagreements")
    parser.add_argument("--raw", action="store_true", help="use the prompt as raw text, no chat template")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of streaming")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from engine.drafts.registry import DEFAULT_DRAFT
    from engine.generation import GenerationRequest, generate, node_log_for, summary
    from engine.models import load_target
    from engine.processing import Sampling
    from engine.round_verification import RoundVerification, is_sequence_level

    if is_sequence_level(args.verifier):
        try:
            RoundVerification(args.verifier).check_branching(args.tree)
        except ValueError as error:
            print(f"resispec generate: {error}", file=sys.stderr)
            return 2
    torch.set_num_threads(args.threads)
    request = GenerationRequest(
        prompt=args.prompt, verifier=args.verifier, draft=args.draft or DEFAULT_DRAFT, branching=args.tree,
        sampling=Sampling(args.temperature, args.top_k, args.top_p), max_new_tokens=args.max_new_tokens,
        seed=args.seed, audit=args.audit, chat=not args.raw, parity_fraction=args.parity,
    )
    model, tokenizer = load_target(device=args.device)
    stream = None if args.json else (lambda text: print(text, end="", flush=True))
    log = node_log_for(model, request, args.log_keep) if args.log else None
    tokens, stats = generate(model, tokenizer, request, on_text=stream, log=log)
    record = summary(tokenizer, tokens, stats, args.audit)
    if log is not None:
        record["log"] = {"path": args.log, "rows": log.write(args.log)}
    if args.json:
        print(json.dumps(record, indent=2))
        return 0
    print()
    print(f"\n{record['tokens']} tokens, {record['tokens_per_second']:.2f} tokens/s, "
          f"{record['accepted_per_forward']:.3f} tokens per target forward ({record['target_forwards']} forwards)")
    if record["acceptance_by_depth"]:
        print("acceptance by depth: " + ", ".join(f"d{d + 1} {a:.3f}" for d, a in enumerate(record["acceptance_by_depth"])))
    if log is not None:
        print(f"log: {record['log']['rows']} verified nodes written to {args.log}")
    if args.parity:
        print(f"parity: {record['parity']['checked']} nodes re-decided by the NumPy reference, "
              f"{record['parity']['mismatches']} disagreements")
    if args.audit:
        audit = record["audit"]
        print("audit: too few tokens" if audit is None else
              f"audit (randomized PIT, n={audit['n']}): KS p={audit['ks_pvalue']:.3g}, "
              f"chi2 p={audit['chi2_pvalue']:.3g} -> {audit['verdict']} "
              f"(detects TV >= {audit['min_detectable_tv']:.2f} with power 0.9)")
    return 0
