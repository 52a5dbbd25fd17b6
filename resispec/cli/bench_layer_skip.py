"""``resispec bench layer-skip``: the layer-skip draft's layer search (`resispec.engine.bench.layer_search`)."""

from __future__ import annotations

import argparse

from resispec.cli.arguments import nonneg_seed, positive_int, thread_count
from resispec.cli.model_options import add_target_argument
from resispec.cli.output import strict_json


def register(bench_subparsers: argparse._SubParsersAction) -> None:
    parser = bench_subparsers.add_parser(
        "layer-skip", help="layer-skip draft: acceptance and cost of nested layer sets, the predicted best")
    add_target_argument(parser)
    parser.add_argument("--target-compute", choices=("float32", "native"), default="native",
                        help="the target whose layers are searched (default: native)")
    parser.add_argument("--texts", type=positive_int, default=3, help="calibration prompts continued by the target")
    parser.add_argument("--new-tokens", type=positive_int, default=32, help="tokens sampled per text (T = 1)")
    parser.add_argument("--repeats", type=positive_int, default=7, help="timed forwards per cost (median)")
    parser.add_argument("--seed", type=nonneg_seed, default=0)
    parser.add_argument("--threads", type=thread_count, default=1)
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    import torch

    from resispec.cli.table import format_table
    from resispec.engine.bench.layer_search import search_layers
    from resispec.engine.decode.calibration import calibration_prompts
    from resispec.engine.model.models import check_target_compute, load_target

    check_target_compute(args.target_compute, path=args.target)
    torch.set_num_threads(args.threads)
    model, tokenizer = load_target(path=args.target, compute=args.target_compute)
    result = search_layers(model, calibration_prompts(tokenizer, args.texts), args.new_tokens, repeats=args.repeats,
                           seed=args.seed)
    ar = 1.0 / result.target_seconds
    if args.json:
        print(strict_json({**asdict(result), "best": asdict(result.best), "ar_tokens_per_second": ar}))
        return 0
    print(format_table(["kept", "A(1)", "draft fwd (ms)", "chain", "pred. tokens/s", "vs ar", "layers"],
                       [[len(s.layers), f"{s.acceptance:.3f}", f"{1000 * s.draft_seconds:.1f}", s.chain,
                         f"{s.tokens_per_second:.2f}", f"{s.tokens_per_second / ar:.2f}x", ",".join(map(str, s.layers))]
                        for s in result.sets]))
    print(f"\nacceptance lost without each layer: {', '.join(f'{x:.3f}' for x in result.importance)}")
    best = result.best
    print(f"target one-node forward {1000 * result.target_seconds:.1f} ms (ar {ar:.2f} tokens/s); best layer set: "
          f"layer-skip:{','.join(map(str, best.layers))} ({best.tokens_per_second / ar:.2f}x ar predicted)")
    return 0
