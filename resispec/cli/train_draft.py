"""``resispec train-draft``: distil the engine's trained draft (or, with ``--draft feature``, its feature draft)
from SmolLM2-135M, end to end.

The pipeline of ``resispec.engine.train.train_draft``: the target continues the training prompts, the draft's own
layers learn KL(p || q), the held-out overlap, the curve and the weights are written (each step resumable).
``--draft feature`` trains the EAGLE-style head on the same text instead
(``resispec.engine.train.train_feature_draft``).
``--preset tiny`` runs the same pipeline on tiny random models in seconds. Progress goes to stdout and
``<run folder>/train.log``; the last line is the results as one strict JSON object.
"""

from __future__ import annotations

import argparse

from resispec.cli.arguments import output_dir, positive_int, thread_count
from resispec.cli.output import strict_json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("train-draft", help="distil the engine's trained draft from the target",
                                   description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="smollm2", help="smollm2 (the shipped draft) or tiny (a smoke run)")
    parser.add_argument("--work", type=output_dir, default=None, metavar="DIR",
                        help="data and checkpoints (default: out/ in the repository)")
    parser.add_argument("--draft", choices=("trained", "feature"), default="trained",
                        help="trained (3 layers of its own on tokens) or feature (one layer on the target's states)")
    parser.add_argument("--steps", type=positive_int, default=None, help="override the preset's optimizer steps")
    parser.add_argument("--threads", type=thread_count, default=1,
                        help="torch threads (default 1: on a shared, oversubscribed CPU two threads stall each other)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from resispec.engine.train.train_draft import PRESETS, REPO
    from resispec.engine.train.train_draft import run as train_draft

    if args.preset not in PRESETS:
        raise ValueError(f"--preset: expected one of {', '.join(sorted(PRESETS))}, got {args.preset!r}")
    torch.set_num_threads(args.threads)
    work = args.work or REPO / "out"
    if args.draft == "feature":
        from resispec.engine.train.train_feature_draft import run_feature_preset

        results = run_feature_preset(args.preset, work, args.steps)
    else:
        results = train_draft(args.preset, work, args.steps)
    print(strict_json(results).replace("\n", " "))
    return 0
