"""``resispec bench model``: target load times, tree forward times and the drafts' (early exit, trained) cost."""

from __future__ import annotations

import argparse
import sys

from resispec.cli.arguments import candidate_count, positive_int, thread_count


def register(bench_subparsers: argparse._SubParsersAction) -> None:
    parser = bench_subparsers.add_parser(
        "model", help="target load / tree forward / draft timings; forward cost per node count before/after")
    parser.add_argument("--prompt-len", type=positive_int, default=64, help="cached prompt length (tokens)")
    parser.add_argument("--branching", type=candidate_count, nargs="+", default=[4, 2, 2, 1], help="children per depth")
    parser.add_argument("--draft-layers", type=positive_int, nargs="+", default=[2, 4, 6, 10], help="early-exit depths")
    parser.add_argument("--repeats", type=positive_int, default=20, help="timed runs per figure (median)")
    parser.add_argument("--threads", type=thread_count, default=2, help="torch CPU threads")
    parser.add_argument("--skip-load", action="store_true", help="skip the (slow) first-load timing")
    parser.add_argument("--node-counts", type=positive_int, nargs="+", default=None,
                        help="forward cost per node count, transformers' forward vs CompactLM (default 1..64)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from resispec.cli.table import format_table
    from resispec.engine.decode.timing import NODE_COUNTS, time_forwards, time_loads, time_node_counts

    torch.set_num_threads(args.threads)
    stage = lambda text: print(f"bench model: {text}", file=sys.stderr, flush=True)  # noqa: E731
    if not args.skip_load:
        stage("timing the target's first load (GGUF -> cache) and a cached one")
        loads = time_loads()
        print(f"load_target: first (GGUF -> cache) {loads.first_s:.2f} s, cached {loads.cached_s:.2f} s")
    stage(f"timing the target's and the drafts' forwards, median of {args.repeats}")
    times = time_forwards(args.prompt_len, args.branching, args.draft_layers, args.repeats)
    print(f"on a cached prompt of {times.prompt_len} tokens, {args.threads} threads, median of {args.repeats}:")
    print(f"  target, 1 token:            {1e3 * times.target_token_s:7.1f} ms")
    print(f"  target, tree of {times.tree_nodes} nodes:    {1e3 * times.target_tree_s:7.1f} ms"
          f"  ({times.target_tree_s / times.target_token_s:.2f} x one token)")
    for label, seconds in times.draft_token_s.items():
        levels = times.draft_levels_s[label]
        print(f"  {label + ', 1 token:':27s} {1e3 * seconds:7.1f} ms"
              f"  ({seconds / times.target_token_s:.2f} x target); levels of the tree: {1e3 * levels:7.1f} ms")
    stage("timing the forward per node count")
    nodes = time_node_counts(args.node_counts or NODE_COUNTS, args.prompt_len, args.repeats)
    print("\nforward cost per node count (chain of n nodes on the cached prompt), ms, one run:")
    print(format_table(
        ["nodes", "target before (transformers)", "target after (CompactLM)", "after / 1 node", *nodes.drafts_s],
        [[n, f"{1e3 * b:.1f}", f"{1e3 * a:.1f}", f"{a / nodes.after_s[0]:.2f}x",
          *[f"{1e3 * d[i]:.1f}" for d in nodes.drafts_s.values()]]
         for i, (n, b, a) in enumerate(zip(nodes.counts, nodes.before_s, nodes.after_s))]))
    return 0
