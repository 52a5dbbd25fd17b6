"""``resispec bench headroom``: what acceptance a draft would need on this machine to reach a speedup goal.

The target's measured forward costs at 1..32 nodes, the verification and what real decoding adds per round come from
the `--tree auto` calibration of each draft named (cached; about a minute each the first time); the draft is
then made hypothetical, of acceptance a and a cost fraction f of the target (`resispec.engine.bench.headroom`). It
prints
the cost model, the ceiling of a perfect draft, the least acceptance reaching ``--goal`` per cost fraction, and
where each real draft stands; ``--plot`` draws the attainable speedup against a.
"""

from __future__ import annotations

import argparse
import sys

from resispec.cli.arguments import (
    draft_name,
    nonnegative_number,
    output_file,
    positive_number,
    thread_count,
    verifier_name,
)
from resispec.cli.model_options import add_target_argument, add_target_compute_argument
from resispec.cli.output import strict_json

DEFAULT_FRACTIONS = (0.0, 0.05, 0.1, 0.2, 0.4)
SHOWN_NODES = (1, 2, 3, 4, 8, 16)


def register(bench_subparsers: argparse._SubParsersAction) -> None:
    parser = bench_subparsers.add_parser(
        "headroom", help="the acceptance a draft would need here for a speedup goal, from measured costs")
    parser.add_argument("--drafts", nargs="+", type=draft_name, default=["feature", "layer-skip", "ngram"],
                        help="drafts whose calibrations give the costs and are placed on the chart")
    parser.add_argument("--verifier", type=verifier_name, default="rrs",
                        help="verifier of the calibrations (default: rrs)")
    parser.add_argument("--goal", type=positive_number, default=1.5, help="speedup over plain decoding (default 1.5)")
    parser.add_argument("--fractions", type=nonnegative_number, nargs="+", default=list(DEFAULT_FRACTIONS),
                        help="hypothetical draft costs, fractions of the target's forward at equal rows")
    parser.add_argument("--plot", type=output_file, default=None, help="write the chart here (PNG)")
    add_target_argument(parser)
    add_target_compute_argument(parser, fastest_default=True)
    parser.add_argument("--threads", type=thread_count, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    import torch

    from resispec.cli.table import format_table
    from resispec.engine.bench.headroom import (
        attainable,
        measured_point,
        median_costs,
        plain_seconds,
        plot_headroom,
        required_acceptance,
    )
    from resispec.engine.decode.calibration import choose_tree
    from resispec.engine.decode.processing import Sampling
    from resispec.engine.drafts.registry import make_draft, resolve_draft_name
    from resispec.engine.model.models import check_target_compute, fastest_target_compute, load_target, with_compute
    from resispec.engine.runtime.machine import cpu_description

    compute = args.target_compute or fastest_target_compute(path=args.target)
    check_target_compute(compute, path=args.target)
    torch.set_num_threads(args.threads)
    model, tokenizer = load_target(path=args.target)
    target = with_compute(model, compute, args.target)
    calibrations = {}
    for name in args.drafts:
        resolved = resolve_draft_name(name, target)
        _, calibrations[resolved], _ = choose_tree(target, tokenizer, lambda: make_draft(resolved, target), resolved,
                                                   args.verifier, Sampling(), args.threads)
    costs = median_costs(list(calibrations.values()))  # each calibration times the target anew
    points = [measured_point(name, calibration, costs) for name, calibration in calibrations.items()]
    ceilings = {f: {trees: attainable(costs, 1.0, f, trees) for trees in (False, True)} for f in args.fractions}
    needed = {f: {trees: required_acceptance(costs, f, args.goal, trees) for trees in (False, True)}
              for f in args.fractions}
    cpu = cpu_description()
    title = (f"Speedup a draft could reach: {compute} target, {args.threads} thread(s), verifier {args.verifier}, "
             f"goal {args.goal:g}x\n{cpu}")
    if args.plot is not None:
        plot_headroom(costs, args.fractions, points, args.goal, args.plot, title)
    if args.json:
        print(strict_json({
            "target_compute": compute, "threads": args.threads, "verifier": args.verifier, "goal": args.goal,
            "cpu": cpu, "plain_seconds": plain_seconds(costs), "target_seconds": costs.target_seconds,
            "round_seconds": costs.round_seconds, "plain_round_seconds": costs.plain_round_seconds,
            "verify_seconds": costs.verify_seconds,
            "ceilings": [{"draft_fraction": f, "chain": asdict(c[False]), "tree_model": asdict(c[True])}
                         for f, c in ceilings.items()],
            "required_acceptance": [{"draft_fraction": f, "chain": n[False], "tree_model": n[True]}
                                    for f, n in needed.items()],
            "drafts": [asdict(point) for point in points]}))
        return 0
    one = costs.target_cost(1)
    print(f"cost model ({compute} target, {args.threads} thread(s); {cpu}):")
    print(format_table(["nodes in the target's forward", *map(str, SHOWN_NODES)],
                       [["seconds / one node's", *(f"{costs.target_cost(n) / one:.2f}" for n in SHOWN_NODES)]]))
    print(f"one-node forward {1000 * one:.1f} ms; one node's verification u(1) "
          f"{1000 * costs.verify_seconds[1]:.1f} ms; what real decoding adds: per round v "
          f"{1000 * costs.round_seconds:.1f} ms, per plain token v_plain {1000 * costs.plain_round_seconds:.1f} ms; "
          f"plain decoding {1 / plain_seconds(costs):.1f} tokens/s")

    def shape(choice) -> str:
        return ",".join(map(str, choice.branching))

    def acceptance_text(value: float | None) -> str:
        return f"{value:.3f}" if value is not None else "unreachable"

    print()
    print(format_table(
        ["draft cost / target", "perfect draft: best chain", "speedup", f"least a for {args.goal:g}x: chains",
         "trees (model)"],
        [[f"{f:g}", shape(ceilings[f][False].choice), f"{ceilings[f][False].speedup:.2f}x",
          acceptance_text(needed[f][False]), acceptance_text(needed[f][True])] for f in args.fractions]))
    print()
    print(format_table(
        ["draft", "A(1)", "cost / target", "auto's shape", "predicted speedup",
         f"least a for {args.goal:g}x at its cost"],
        [[p.name, f"{p.acceptance:.3f}", f"{p.draft_fraction:.2f}", shape(p.choice) or "-", f"{p.speedup:.2f}x",
          acceptance_text(required_acceptance(costs, p.draft_fraction, args.goal))] for p in points]))
    if args.plot is not None:
        print(f"\nchart: {args.plot}", file=sys.stderr)
    return 0
