"""``resispec bench engine``: the engine vs plain decoding vs transformers' assisted generation, one run."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from resispec.cli.arguments import (
    check_device,
    decoding_verifier,
    device,
    draft_name,
    integer_in,
    nonneg_seed,
    positive_int,
    temperature,
    thread_count,
    verifier_name,
)
from resispec.cli.generate import DRAFT_HELP, TREE_HELP, parse_tree
from resispec.cli.model_options import add_target_argument, add_target_compute_argument
from resispec.cli.output import strict_json

MAX_ASSISTANT_TOKENS = 64
"""Constant assistant tokens per round of transformers' assisted generation (its drafts are that long)."""


def register(bench_subparsers: argparse._SubParsersAction) -> None:
    parser = bench_subparsers.add_parser(
        "engine", help="speculative decoding vs autoregressive vs transformers' assisted generation (held-out prompts)")
    parser.add_argument("--verifier", nargs="+", type=decoding_verifier, default=None,
                        help="verifiers (default: every exact one)")
    parser.add_argument("--draft", type=draft_name, default=None, help=DRAFT_HELP)
    add_target_argument(parser)
    add_target_compute_argument(parser, several=True, fastest_default=True)
    parser.add_argument("--tree", type=parse_tree, default="auto", help=TREE_HELP)
    parser.add_argument("--tree-from", type=verifier_name, default=None, metavar="VERIFIER",
                        help="with --tree auto: choose the tree once, by this verifier's calibration, and decode "
                             "every verifier on it (equal draft and tree; those that cannot take it are left out)")
    parser.add_argument("--max-new-tokens", type=positive_int, default=48)
    parser.add_argument("--prompts", type=positive_int, default=None, help="use only the first N prompts")
    parser.add_argument("--temperature", type=temperature, default=1.0)
    parser.add_argument("--assistant-tokens", type=integer_in(1, MAX_ASSISTANT_TOKENS, "assistant tokens"), nargs="*",
                        default=[4, 6, 8],
                        help="transformers assisted generation with these constant numbers of assistant tokens "
                             "(the best is the peer); the option with no value skips them")
    parser.add_argument("--llama-cpp", nargs="*", choices=("plain", "lookup"), default=["plain", "lookup"],
                        help="llama.cpp on the same GGUF, threads, prompts and untruncated sampling: plain and/or "
                             "with its prompt-lookup draft (needs the extra 'peer': llama-cpp-python; skipped with "
                             "one line without it); the option with no value skips llama.cpp")
    parser.add_argument("--seed", type=nonneg_seed, default=0)
    parser.add_argument("--device", type=device, default="cpu")
    parser.add_argument("--threads", type=thread_count, default=1)
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from resispec.cli.table import format_table
    from resispec.engine.bench.bench_engine import bench_engine, best_peer, engine_row_name, pooled_plain
    from resispec.engine.bench.llama_peer import LLAMA, make_llama_peers
    from resispec.engine.data.prompts import load_bench_prompts as load_prompts
    from resispec.engine.decode.decoding import AUTOREGRESSIVE
    from resispec.engine.decode.processing import Sampling
    from resispec.engine.drafts.registry import DEFAULT_DRAFT, resolve_draft_name
    from resispec.engine.model.gguf import target_gguf_path
    from resispec.engine.model.models import check_target_compute, fastest_target_compute, load_target, with_compute
    from resispec.engine.model.native import describe_native
    from resispec.engine.runtime.machine import cpu_description
    from resispec.verifiers import VERIFIERS

    check_device(args.device)
    if args.tree_from and args.tree != "auto":
        raise ValueError("--tree-from chooses the tree: give it with --tree auto, not an explicit tree")
    torch.set_num_threads(args.threads)
    widest = 1 if args.tree == "auto" else max(args.tree)
    verifiers = args.verifier or [name for name, cls in VERIFIERS.items()
                                  if cls.claims_exact and (cls.max_k is None or cls.max_k >= widest
                                                           or args.tree_from)]  # shared tree: filtered then
    computes = list(dict.fromkeys(args.target_compute or [fastest_target_compute(args.device, path=args.target)]))
    for compute in computes:
        check_target_compute(compute, args.device, path=args.target)
    model, tokenizer = load_target(device=args.device, path=args.target)
    targets = {compute: with_compute(model, compute, args.target) for compute in computes}
    draft = args.draft or DEFAULT_DRAFT
    prompts = load_prompts()[: args.prompts]
    gguf = (target_gguf_path() if args.target is None
            else Path(args.target) if Path(args.target).suffix.lower() == ".gguf" else None)
    llama_peers, skipped = make_llama_peers(gguf, args.threads, args.llama_cpp)
    if skipped:
        print(f"resispec bench engine: skipped the llama.cpp peer: {skipped}", file=sys.stderr)
    rows = bench_engine(targets, tokenizer, verifiers, draft, args.tree, args.max_new_tokens,
                        Sampling(args.temperature), args.seed, prompts, args.assistant_tokens, args.threads,
                        progress=True, tree_from=args.tree_from, llama_peers=llama_peers)
    peer = best_peer(rows)
    engine_names = {engine_row_name(v, c, computes) for v in verifiers for c in computes}
    engine_rows = [row for row in rows if row.name in engine_names]
    by_name = {row.name: row for row in rows}
    ar_rates = {c: by_name[engine_row_name(AUTOREGRESSIVE, c, computes)].tokens_per_second for c in computes}
    native_over_float = (ar_rates["native"] / ar_rates["float32"]
                         if {"native", "float32"} <= set(computes) and all(ar_rates.values()) else None)
    best = max(engine_rows, key=lambda row: row.tokens_per_second or 0, default=None)
    versus_peer = best.tokens_per_second / peer.tokens_per_second if best and peer else None
    llama = by_name.get(LLAMA)
    pooled = {c: pooled_plain(rows, engine_row_name(AUTOREGRESSIVE, c, computes)) for c in computes}

    def over_llama(row) -> float | None:
        return row.tokens_per_second / llama.tokens_per_second if llama and row.tokens_per_second else None

    settings = {"draft": {compute: resolve_draft_name(draft, target) for compute, target in targets.items()},
                "tree": args.tree if args.tree == "auto" else list(args.tree),
                "prompts": len(prompts), "max_new_tokens": args.max_new_tokens, "temperature": args.temperature,
                "threads": args.threads, "target_compute": computes, "native_ar_over_float32_ar": native_over_float,
                "peer": peer.name if peer else None,
                "best_engine": best.name if best else None, "engine_over_peer": versus_peer,
                "llama_cpp_skipped": skipped, "best_engine_over_llama_cpp": over_llama(best) if best else None,
                "cpu": cpu_description(), "native": describe_native(targets["native"]) if "native" in targets else None,
                "load": list(os.getloadavg()),
                "pooled_plain": {c: row.to_dict() if row else None for c, row in pooled.items()}}
    if args.json:
        print(strict_json({**settings, "rows": [{**row.to_dict(), "over_llama_cpp": over_llama(row)}
                                                for row in rows]}))
        return 0

    def share(row, part):
        return f"{100 * part / row.seconds:.0f}%" if row.seconds else "-"

    def rate(value) -> str:
        return f"{value:.2f}" if value is not None else "-"

    def spread(row) -> str:
        return f"{row.spread[0]:.1f}-{row.spread[1]:.1f}" if row.spread else "-"

    shown = rows + [row for row in pooled.values() if row is not None]
    print(format_table(
        ["configuration", "tree", "tokens", "tokens / forward", "tokens / s", "decode only", "per prompt",
         "speedup vs ar", "draft", "target fwd", "verify", "other", *(["vs llama.cpp"] if llama else [])],
        [[r.name + (f" (= {r.same_as})" if r.same_as else ""), r.tree or "-", r.tokens,
          f"{r.accepted_per_forward:.2f}", rate(r.tokens_per_second), rate(r.decode_tokens_per_second), spread(r),
          f"{r.speedup:.2f}x" if r.speedup else "-", share(r, r.draft_seconds), share(r, r.target_seconds),
          share(r, r.verify_seconds), share(r, r.other_seconds),
          *([f"{over_llama(r):.2f}x"] if llama else [])] for r in shown]))
    print("\nrows marked (= ar ...) decoded every prompt plainly: the same computation as that ar row, pooled below "
          "it; order rotated per prompt, every configuration warmed up first.")
    drafts = ", ".join(f"{name} [{compute}]" for compute, name in settings["draft"].items())
    print(f"\ndraft {drafts}, tree {args.tree if args.tree == 'auto' else ','.join(map(str, args.tree))}, "
          f"{len(prompts)} held-out prompts x {args.max_new_tokens} new tokens, T = {args.temperature}, "
          f"{args.threads} thread(s); all from one run; load average {os.getloadavg()[0]:.1f}.")
    if "native" in targets:
        print(describe_native(targets["native"]) + f"; CPU: {cpu_description()}.")
    if native_over_float is not None:
        print(f"ar on the native target / ar on the float32 target: {native_over_float:.2f}x")
    if versus_peer is not None:
        print(f"best engine configuration ({best.name}) / best transformers assisted generation ({peer.name}): "
              f"{versus_peer:.2f}x")
    return 0
