"""``resispec bench zoo-headroom``: every exact node verifier's predicted speedup, on this CPU and on a flat
(GPU-like) forward, from its measured multi-candidate acceptance.

The costs (the target's forward over 1..32 nodes, the draft's, what real decoding adds per round and per plain
token, the correlation of consecutive positions) come from the `--tree auto` calibration of ``--draft`` (cached;
about a minute the first time). Each verifier's ``A(1..K)`` is its exact acceptance over logged rows (the
simulator's kernels; ``--rows``, a ``logged:`` source of `resispec explore`) and its ``u(k)`` is timed on those rows
at the target's vocabulary (`resispec.engine.bench.zoo_headroom`). The flat curve keeps ``t(n) = t(1)`` up to
``--widths`` nodes. Prints one table (the best shape, the speedup over plain decoding and over rrs, per verifier and
curve); ``--plot`` draws the speedups.
"""

from __future__ import annotations

import argparse
import sys

from resispec.cli.arguments import draft_name, output_file, positive_int, thread_count, verifier_name
from resispec.cli.model_options import add_target_argument, add_target_compute_argument
from resispec.cli.output import strict_json

DEFAULT_ROWS = "logged:sample"
DEFAULT_WIDTHS = (16, 64)


def register(bench_subparsers: argparse._SubParsersAction) -> None:
    parser = bench_subparsers.add_parser(
        "zoo-headroom", help="each exact verifier's predicted speedup on this CPU and on a flat (GPU-like) forward")
    parser.add_argument("--rows", default=DEFAULT_ROWS,
                        help=f"logged rows for A(k) and u(k): logged:FILE[,draft=NAME] (default {DEFAULT_ROWS})")
    parser.add_argument("--pairs", type=positive_int, default=96, help="rows used, from the first (default 96)")
    parser.add_argument("--draft", type=draft_name, default="feature",
                        help="draft whose calibration gives the costs (default: feature)")
    parser.add_argument("--verifier", type=verifier_name, default="rrs",
                        help="verifier of that calibration (default: rrs)")
    parser.add_argument("--widths", type=positive_int, nargs="+", default=list(DEFAULT_WIDTHS),
                        help="nodes up to which the flat forward costs one node's (default 16 64)")
    parser.add_argument("--plot", type=output_file, default=None, help="write the chart here (PNG)")
    add_target_argument(parser)
    add_target_compute_argument(parser, fastest_default=True)
    parser.add_argument("--threads", type=thread_count, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    import numpy as np
    import torch

    from resispec.cli.table import format_table
    from resispec.engine.bench.headroom import plain_seconds
    from resispec.engine.bench.zoo_headroom import node_verifiers, plot_zoo, verification_costs, zoo_table
    from resispec.engine.decode.calibration import choose_tree
    from resispec.engine.decode.processing import Sampling
    from resispec.engine.decode.tree_search import MAX_CHILDREN
    from resispec.engine.drafts.registry import make_draft, resolve_draft_name
    from resispec.engine.model.models import check_target_compute, fastest_target_compute, load_target, with_compute
    from resispec.engine.runtime.machine import cpu_description
    from resispec.sim.explorer import Settings, acceptance_curves
    from resispec.sim.sources import parse_source, readable_spec

    try:
        batch = parse_source(args.rows).sample(args.pairs, np.random.default_rng(0))
    except (ValueError, OSError) as error:
        raise ValueError(f"--rows: {error}") from None
    compute = args.target_compute or fastest_target_compute(path=args.target)
    check_target_compute(compute, path=args.target)
    torch.set_num_threads(args.threads)
    model, tokenizer = load_target(path=args.target)
    target = with_compute(model, compute, args.target)
    resolved = resolve_draft_name(args.draft, target)
    _, costs, _ = choose_tree(target, tokenizer, lambda: make_draft(resolved, target), resolved, args.verifier,
                              Sampling(), args.threads)

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    verifiers = node_verifiers()
    acceptance = acceptance_curves(batch, verifiers, MAX_CHILDREN, Settings(pairs=len(batch)), progress)
    verify_seconds = verification_costs(batch.p, batch.q, {name: len(a) for name, a in acceptance.items()},
                                        model.config.vocab_size, lambda name: progress(f"u(k) of {name} timed"))
    points = zoo_table(costs, acceptance, verify_seconds, args.widths)
    cpu = cpu_description()
    title = (f"Predicted speedup over plain decoding per verifier: {compute} target, {args.threads} thread(s), "
             f"costs of draft {resolved}; A(k) on {readable_spec(batch.source)} ({len(batch)} rows)\n{cpu}")
    if args.plot is not None:
        plot_zoo(points, args.plot, title)
    if args.json:
        print(strict_json({"target_compute": compute, "threads": args.threads, "draft": resolved, "cpu": cpu,
                           "rows": batch.source, "pairs": len(batch), "plain_seconds": plain_seconds(costs),
                           "target_seconds": costs.target_seconds, "widths": args.widths,
                           "points": [asdict(point) for point in points]}))
        return 0
    print(f"{cpu}; {compute} target, {args.threads} thread(s); costs: draft {resolved} (calibrated with "
          f"{args.verifier}); A(k): {batch.source}, {len(batch)} rows; plain decoding "
          f"{1 / plain_seconds(costs):.1f} tokens/s")
    print(format_table(
        ["verifier", "A(1..4)", "u(1..4) ms", "curve", "best shape", "tokens/round", "speedup", "/ rrs"],
        [[p.verifier, " ".join(f"{a:.3f}" for a in p.acceptance),
          " ".join(f"{1000 * p.verify_seconds[k]:.1f}" for k in sorted(p.verify_seconds)), p.curve,
          ",".join(map(str, p.choice.branching)) or "plain", f"{p.choice.tokens_per_round:.2f}",
          f"{p.speedup:.2f}x", "-" if p.over_baseline is None else f"{p.over_baseline:.3f}"] for p in points]))
    if args.plot is not None:
        print(f"\nchart: {args.plot}", file=sys.stderr)
    return 0
