"""``resispec replay``: log real-model rounds for ``resispec sim rounds`` and score them.

A sequence-level driver (``traversal`` for i.i.d. trees, ``traversal_wor`` for WOR trees, ``block`` for
chains) decodes the benchmark prompts with the real target and a draft, cycling through the prompts with
seeds ``seed, seed + 1, ...`` until ``--rounds`` rounds are logged (``resispec.engine.bench.round_replay``); the
log is written to ``--log`` and scored by ``resispec.sim.rounds`` (the same table as ``resispec sim rounds LOG``).
"""

from __future__ import annotations

import argparse

from resispec.cli.arguments import draft_name, nonneg_seed, output_file, positive_int, thread_count, tree_shape

DRAFTINGS = ("iid", "wor", "chain")
"""How the tree is drafted: i.i.d. children (traversal), without replacement (traversal_wor), a chain (block)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("replay", help="log real-model rounds (a round log) and score every round verifier",
                                   description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=tree_shape, default=(4, 2, 2, 1),
                        help="branching per depth, e.g. 4,2,2,1 (a chain such as 1,1,1,1 for --drafting chain)")
    parser.add_argument("--drafting", choices=DRAFTINGS, default="iid")
    parser.add_argument("--rounds", type=positive_int, default=200, help="log at least this many rounds")
    parser.add_argument("--max-new-tokens", type=positive_int, default=64)
    parser.add_argument("--prompts", type=positive_int, default=6, help="how many benchmark prompts")
    parser.add_argument("--keep", type=positive_int, default=256, help="kept ids per row")
    parser.add_argument("--seed", type=nonneg_seed, default=0)
    parser.add_argument("--draft", type=draft_name, default=None, help="draft name (default: the engine's)")
    parser.add_argument("--threads", type=thread_count, default=1, help="torch CPU threads")
    parser.add_argument("--log", type=output_file, required=True, metavar="FILE",
                        help="write the round log (.npz) here")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.tree == "auto":
        raise ValueError("--tree: replay logs a fixed tree; give the branching per depth, e.g. 4,2,2,1")
    import torch

    from resispec.engine.bench.round_replay import DRIVERS, log_rounds
    from resispec.engine.data.prompts import load_bench_prompts as load_prompts
    from resispec.engine.drafts.registry import DEFAULT_DRAFT
    from resispec.engine.model.models import load_target
    from resispec.formats.pairs import write_logged
    from resispec.sequence import get_round_verifier
    from resispec.sim.rounds import score_log, summarise, table

    if get_round_verifier(DRIVERS[args.drafting]).chains_only and max(args.tree) > 1:
        raise ValueError(f"--tree: --drafting chain takes a chain (1,1,...), not {','.join(map(str, args.tree))}")
    torch.set_num_threads(args.threads)
    model, tokenizer = load_target()
    logged = log_rounds(model, tokenizer, args.drafting, args.tree, load_prompts()[: args.prompts], args.rounds,
                        args.max_new_tokens, args.seed, args.keep, args.draft or DEFAULT_DRAFT)
    write_logged(args.log, logged)
    kind, accepted = score_log(logged)
    print(table(kind, summarise(accepted, next(iter(accepted)))))
    return 0
