"""``resispec bench draft``: the drafts' overlap with the target and verifier acceptance on held-out text.

Pairs (p, q) at T = 1 on the target's continuations of the held-out prompts (the distillation data's
held-out split, generated into ``--work`` if missing); estimated tokens per target forward per tree
from the acceptance (formula and caveat in `resispec.engine.bench.draft_eval`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from resispec.cli.arguments import (
    candidate_count,
    draft_name,
    nonneg_seed,
    positive_int,
    thread_count,
    tree_shape,
    verifier_name,
)
from resispec.cli.model_options import add_target_compute_argument
from resispec.cli.table import format_table


def register(bench_subparsers: argparse._SubParsersAction) -> None:
    parser = bench_subparsers.add_parser("draft", help="drafts: overlap, cost and acceptance on held-out text")
    parser.add_argument("--work", type=Path, default=None, help="distillation data folder (default: out/)")
    parser.add_argument("--positions", type=positive_int, default=150, help="held-out positions drawn (seeded)")
    parser.add_argument("--verifiers", nargs="+", type=verifier_name, default=["rrs", "rrs_wor", "resispec"])
    parser.add_argument("--ks", type=candidate_count, nargs="+", default=[1, 2, 4], help="candidates per node")
    parser.add_argument("--draws", type=positive_int, default=64,
                        help="Monte Carlo draws per position (no closed form)")
    parser.add_argument("--trees", nargs="+", type=tree_shape,
                        default=[(4, 2, 2, 1), (2, 2, 2, 2), (4, 2, 1, 1), (2, 2, 1, 1, 1)],
                        help="branchings to estimate tokens per target forward for (only ks above)")
    parser.add_argument("--drafts", nargs="+", type=draft_name, default=["trained", "early-exit-6"],
                        help="drafts compared (registry names: trained, early-exit-L, int4, ngram, layer-skip, ...); "
                             "acceptance tables for each")
    add_target_compute_argument(parser)
    parser.add_argument("--repeats", type=positive_int, default=7, help="timed one-row forwards per cost (median)")
    parser.add_argument("--seed", type=nonneg_seed, default=0)
    parser.add_argument("--threads", type=thread_count, default=2, help="torch CPU threads")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np
    import torch

    from resispec.engine.bench.draft_eval import draft_pairs, forward_seconds, mean_acceptance, tokens_per_round
    from resispec.engine.drafts.registry import make_draft
    from resispec.engine.model.models import check_target_compute, with_compute
    from resispec.engine.runtime.compact_lm import lm_for
    from resispec.engine.train.train_draft import REPO, first_samples, load_data
    from resispec.progress import progress

    check_target_compute(args.target_compute)
    torch.set_num_threads(args.threads)
    target, data, _ = load_data("smollm2", args.work or REPO / "out", ["heldout"], log=lambda _: None)
    p_model = with_compute(target, args.target_compute) if args.target_compute != "float32" else None
    model = p_model or target
    heldout = first_samples(data["heldout"])
    rng = np.random.default_rng(args.seed)
    trees = [tree for tree in args.trees if set(tree) <= set(args.ks)]
    rows = np.sort(rng.choice(heldout.num_targets, size=min(args.positions, heldout.num_targets), replace=False))
    prompt = heldout.sequence(0)[0][: heldout.sequence(0)[1]]
    target_seconds = forward_seconds(lm_for(model), prompt, args.repeats)
    print(f"target ({args.target_compute}): one-row forward {1000 * target_seconds:.1f} ms; "
          f"{len(rows)} held-out positions drawn from {heldout.num_targets}")
    summary = []
    for name in progress(args.drafts, desc="bench draft", unit="draft"):
        draft = make_draft(name, model)
        p, q, drafts = draft_pairs(target, draft, heldout, rows, p_model)
        overlap = np.minimum(p, q).sum(-1)
        cost = forward_seconds(draft, prompt, args.repeats)
        summary.append([name, f"{drafts.mean():.3f}", f"{overlap[drafts].mean():.4f}" if drafts.any() else "-",
                        f"{1000 * cost:.1f}", f"{cost / target_seconds:.2f}"])
        if not drafts.any():
            continue
        acceptance = {verifier: {k: mean_acceptance(verifier, p[drafts], q[drafts], k, args.draws, rng)
                                 for k in args.ks} for verifier in args.verifiers}
        headers = ["verifier", *(f"k={k}" for k in args.ks), *(f"tree {','.join(map(str, t))}" for t in trees)]
        table = [[verifier, *(f"{a[k][0]:.3f} +- {a[k][1]:.3f}" for k in args.ks),
                  *(f"{tokens_per_round({k: v[0] for k, v in a.items()}, tree):.2f}" for tree in trees)]
                 for verifier, a in acceptance.items()]
        print(f"\n{name}: acceptance alpha(k) where it drafts (mean +- standard error) and estimated tokens per "
              "target forward of the rounds it drafts")
        print(format_table(headers, table))
    print()
    print(format_table(["draft", "drafts at", "overlap sum min(p, q) there", "one-row forward (ms)", "vs target"],
                       summary))
    return 0
