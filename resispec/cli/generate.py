"""``resispec generate``: decode with the real target, speculatively or autoregressively."""

from __future__ import annotations

import argparse
import sys

from resispec.cli.arguments import (
    check_device,
    decoding_verifier,
    device,
    draft_name,
    nonempty_text,
    nonneg_seed,
    output_file,
    positive_int,
    probability,
    temperature,
    thread_count,
    top_p,
    tree_shape,
)
from resispec.cli.model_options import add_target_argument, add_target_compute_argument
from resispec.cli.output import strict_json

TREE_HELP = ("auto (default: the tree maximising expected tokens/s from measured acceptance and costs, "
             "calibrated once and cached; none, i.e. plain decoding, where no tree is predicted faster) or the "
             "branching per depth, e.g. 1,1,1,1 (a chain) or 4,2,2,1")
DTYPES = {"float32": "float32", "bfloat16": "bfloat16"}
DTYPE_HELP = ("the target's dtype: float32 (default; every token is distributed exactly as the float32 model's p) "
              "or bfloat16 (faster, but it CHANGES p: samples follow the bfloat16 model, not the float32 one)")

parse_tree = tree_shape
"""The ``--tree`` type (``resispec.cli.arguments.tree_shape``: ``auto`` or a branching), also used by
``bench engine``."""


DRAFT_HELP = ("draft model: default (layer-skip for the native target, else int4 on CPU, bf16 elsewhere), int4 / "
              "int8 / bf16 (quantized copies of the target, built at load time), trained (the distilled 3-layer "
              "draft), feature (an EAGLE-style layer on the target's own states), early-exit-L, ngram / ngram-N "
              "(prompt lookup, no model; one-token rounds where no suffix of N tokens recurs), layer-skip / "
              "layer-skip:0,2,5,... (the target's own layers, some skipped), or a checkpoint PATH")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("generate", help="generate text with SmolLM2-135M-Instruct and a verifier")
    parser.add_argument("--prompt", type=nonempty_text, required=True, help="the user message (chat template applied)")
    parser.add_argument("--verifier", type=decoding_verifier, default="resispec",
                        help="a verifier name (zoo; block, traversal, traversal_wor, gbv: sequence-level), "
                             "or 'ar' for plain sampling")
    parser.add_argument("--draft", type=draft_name, default=None, help=DRAFT_HELP)
    add_target_argument(parser)
    add_target_compute_argument(parser, fastest_default=True)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float32", help=DTYPE_HELP)
    parser.add_argument("--tree", type=parse_tree, default="auto", help=TREE_HELP)
    parser.add_argument("--temperature", type=temperature, default=1.0, help="0 = greedy")
    parser.add_argument("--top-k", type=positive_int, default=None)
    parser.add_argument("--top-p", type=top_p, default=None, help="nucleus mass in (0, 1]")
    parser.add_argument("--max-new-tokens", type=positive_int, default=64)
    parser.add_argument("--seed", type=nonneg_seed, default=0)
    parser.add_argument("--audit", action="store_true", help="randomized-PIT audit of every emitted token")
    parser.add_argument("--log", type=output_file, default=None, metavar="FILE",
                        help="write (p, q, candidates, emitted) of every verified node as a logged-pairs .npz")
    parser.add_argument("--log-keep", type=positive_int, default=256, metavar="N", help="token ids kept per logged row")
    parser.add_argument("--parity", type=probability, default=0.0, metavar="FRACTION",
                        help="re-decide this fraction of nodes with the NumPy reference and count disagreements")
    parser.add_argument("--raw", action="store_true", help="use the prompt as raw text, no chat template")
    parser.add_argument("--device", type=device, default="cpu")
    parser.add_argument("--threads", type=thread_count, default=2, help="torch CPU threads")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of streaming")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from resispec.engine.decode.decoding import AUTOREGRESSIVE
    from resispec.engine.decode.generation import (
        GenerationRequest,
        check_request_fits,
        generate,
        node_log_for,
        summary,
    )
    from resispec.engine.decode.processing import Sampling
    from resispec.engine.drafts.registry import DEFAULT_DRAFT, reads_only_target_weights
    from resispec.engine.model.first_run import first_run, first_run_notice
    from resispec.engine.model.models import check_target_compute, fastest_target_compute, load_target

    request = GenerationRequest(
        prompt=args.prompt, verifier=args.verifier, draft=args.draft or DEFAULT_DRAFT, branching=args.tree,
        sampling=Sampling(args.temperature, args.top_k, args.top_p), max_new_tokens=args.max_new_tokens,
        seed=args.seed, audit=args.audit, chat=not args.raw, parity_fraction=args.parity, threads=args.threads,
    )
    if args.log and args.verifier == AUTOREGRESSIVE:
        raise ValueError("--log: autoregressive decoding (--verifier ar) verifies no node, so there is nothing to log")
    check_device(args.device)
    dtype = getattr(torch, args.dtype)
    compute = args.target_compute or fastest_target_compute(args.device, dtype, args.target)
    check_target_compute(compute, args.device, dtype, args.target)
    if args.target is None and first_run():
        print(first_run_notice(), file=sys.stderr, flush=True)
    check_request_fits(request, args.target)
    torch.set_num_threads(args.threads)
    transformers_free = args.verifier == AUTOREGRESSIVE or reads_only_target_weights(request.draft)
    model, tokenizer = load_target(device=args.device, dtype=dtype, path=args.target, compute=compute,
                                   transformers_free=transformers_free)
    stream = None if args.json else (lambda text: print(text, end="", flush=True))
    log = node_log_for(model, request, args.log_keep) if args.log else None
    tokens, stats = generate(model, tokenizer, request, on_text=stream, log=log)
    record = {"target_compute": compute, **summary(tokenizer, tokens, stats, args.audit)}
    if log is not None:
        record["log"] = {"path": str(args.log), "rows": log.write(args.log)}
    if args.json:
        print(strict_json(record))
        return 0
    print()
    print(f"\n{record['tokens']} tokens, {record['tokens_per_second']:.2f} tokens/s, "
          f"{record['accepted_per_forward']:.3f} tokens per target forward ({record['target_forwards']} forwards; "
          f"target computed {compute})")
    tree = record["tree"]
    calibration = (f"calibration {'cached' if tree.get('calibration_cached') else 'measured now'}, "
                   f"{tree['calibration']['summary']}" if tree.get("auto") else "")
    if tree.get("online"):
        used = ", ".join(f"{shape} {count}" for shape, count in tree["shape_tokens"].items())
        print(f"tree auto, decided as it decoded: started {','.join(map(str, tree['branching'])) or 'plain'} "
              f"(predicted {tree['predicted_tokens_per_second']:.1f} tokens/s; {calibration}); tokens by shape: "
              f"{used}")
        for before, change in zip(tree["shapes"], tree["shapes"][1:]):
            if change["index"] > before["index"] + 1:
                print(f"  ({change['index'] - before['index'] - 1} changes of shape not kept)")
            print(f"  from token {change['at_token']}: {','.join(map(str, change['branching'])) or 'plain'} "
                  f"({change['reason']})")
        if tree.get("calibration_refreshed"):
            print(f"calibration refreshed: {tree['calibration_refreshed']}")
    elif tree.get("plain"):
        best = tree["best_tree"]
        print(f"tree auto: none, plain decoding (predicted {tree['predicted_tokens_per_second']:.1f} tokens/s; the "
              f"best tree, {','.join(map(str, best['branching']))}, {best['predicted_tokens_per_second']:.1f}; "
              f"{calibration}); give --tree to speculate anyway")
    elif tree.get("auto"):
        print(f"tree auto: {','.join(map(str, tree['branching']))} "
              f"(predicted {tree['predicted_tokens_per_forward']:.2f} "
              f"tokens per forward, measured {record['accepted_per_forward']:.2f}; {calibration})")
    seconds = record["seconds"]
    print("time: " + ", ".join(f"{name} {value:.2f} s" for name, value in seconds.items()))
    if record["acceptance_by_depth"]:
        by_depth = enumerate(record["acceptance_by_depth"])
        print("acceptance by depth: " + ", ".join(f"d{d + 1} {a:.3f}" for d, a in by_depth))
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
