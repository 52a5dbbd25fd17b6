"""``resispec bench draft``: the drafts' overlap with the target and verifier acceptance on held-out text.

Pairs (p, q) at T = 1 on the target's continuations of the held-out prompts (the distillation data's
held-out split, generated into ``--work`` if missing); estimated tokens per target forward per tree
from the acceptance (formula and caveat in `engine.bench.draft_eval`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from resispec.cli.arguments import candidate_count, nonneg_seed, positive_int, tree_shape, verifier_name
from resispec.cli.table import format_table


def register(bench_subparsers: argparse._SubParsersAction) -> None:
    parser = bench_subparsers.add_parser("draft", help="trained draft: overlap / acceptance on held-out text")
    parser.add_argument("--work", type=Path, default=None, help="distillation data folder (default: out/)")
    parser.add_argument("--positions", type=positive_int, default=150, help="held-out positions drawn (seeded)")
    parser.add_argument("--verifiers", nargs="+", type=verifier_name, default=["rrs", "rrs_wor", "resispec"])
    parser.add_argument("--ks", type=candidate_count, nargs="+", default=[1, 2, 4], help="candidates per node")
    parser.add_argument("--draws", type=positive_int, default=64,
                        help="Monte Carlo draws per position (no closed form)")
    parser.add_argument("--trees", nargs="+", type=tree_shape,
                        default=[(4, 2, 2, 1), (2, 2, 2, 2), (4, 2, 1, 1), (2, 2, 1, 1, 1)],
                        help="branchings to estimate tokens per target forward for (only ks above)")
    parser.add_argument("--early-exit-layers", type=positive_int, default=6, help="early-exit draft compared")
    parser.add_argument("--seed", type=nonneg_seed, default=0)
    parser.add_argument("--threads", type=positive_int, default=2, help="torch CPU threads")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np
    import torch

    from engine.bench.draft_eval import draft_pairs, mean_acceptance, tokens_per_round
    from engine.drafts import EarlyExitDraft, TrainedDraft
    from engine.train.train_draft import REPO, first_samples, load_data

    torch.set_num_threads(args.threads)
    target, data, _ = load_data("smollm2", args.work or REPO / "out", ["heldout"], log=lambda _: None)
    heldout = first_samples(data["heldout"])
    rng = np.random.default_rng(args.seed)
    trees = [tree for tree in args.trees if set(tree) <= set(args.ks)]
    rows = np.sort(rng.choice(heldout.num_targets, size=min(args.positions, heldout.num_targets), replace=False))
    pairs = {
        "trained": draft_pairs(target, TrainedDraft(target), heldout, rows),
        f"early exit L={args.early_exit_layers}": draft_pairs(
            target, EarlyExitDraft(target, args.early_exit_layers), heldout, rows
        ),
    }
    for label, (p, q) in pairs.items():
        print(f"{label}: mean overlap sum min(p, q) = {np.minimum(p, q).sum(-1).mean():.4f} "
              f"over {len(p)} held-out positions drawn from {heldout.num_targets}")
    p, q = pairs["trained"]
    acceptance = {name: {k: mean_acceptance(name, p, q, k, args.draws, rng) for k in args.ks}
                  for name in args.verifiers}
    headers = ["verifier", *(f"k={k}" for k in args.ks), *(f"tree {','.join(map(str, t))}" for t in trees)]
    rows = [[name, *(f"{a[k][0]:.3f} +- {a[k][1]:.3f}" for k in args.ks),
             *(f"{tokens_per_round({k: v[0] for k, v in a.items()}, tree):.2f}" for tree in trees)]
            for name, a in acceptance.items()]
    print("trained draft: acceptance alpha(k) (mean +- standard error) and estimated tokens per target forward")
    print(format_table(headers, rows))
    return 0
