"""``resispec log convert|synth``: logged nodes as Parquet (logic in ``resispec.sim.serving``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from resispec.cli.arguments import (
    candidate_count,
    nonneg_seed,
    output_dir,
    output_file,
    positive_int,
    verifier_name,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    from resispec.sim.serving.defaults import ROWS_PER_GROUP, SYNTH_FAMILY, SYNTH_K, SYNTH_KEPT, SYNTH_ROWS_PER_FILE

    parser = subparsers.add_parser("log", help="logged verified nodes as Parquet: convert, synthesise")
    commands = parser.add_subparsers(dest="log_command", required=True, metavar="SUBCOMMAND")
    convert = commands.add_parser(
        "convert", help="a .npz log (resispec-pairs/1) to Parquet (resispec-nodes/1) or back",
        description="SOURCE ending in .npz is written as the Parquet file OUT; otherwise SOURCE (a Parquet file "
                    "or a directory of shards) is written as the .npz log OUT.")
    convert.add_argument("source", metavar="SOURCE")
    convert.add_argument("out", type=output_file, metavar="OUT")
    convert.add_argument("--verifier", type=verifier_name, metavar="NAME",
                         help="the verifier that made the .npz log's decisions (required for .npz -> Parquet)")
    convert.add_argument("--draft", default="q", metavar="NAME", help="the .npz draft to carry (default: %(default)s)")
    convert.add_argument("--rows-per-group", type=positive_int, default=ROWS_PER_GROUP, metavar="R",
                         help="Parquet row-group size (default: %(default)s)")
    convert.set_defaults(handler=run_convert)
    synth = commands.add_parser(
        "synth", help="a synthetic logged set: LLM-like pairs and a verifier's real decisions",
        description="Writes OUT/part-00000.parquet, ...: pairs from a synthetic family, the top-M ids of p "
                    "kept, the verifier run on the (M + 1)-token merged pair (docs/serving.md).")
    synth.add_argument("--rows", type=positive_int, required=True, metavar="N", help="nodes to write")
    synth.add_argument("--verifier", type=verifier_name, required=True, metavar="NAME",
                       help="any verifier of the registry")
    synth.add_argument("--out", type=output_dir, required=True, metavar="DIR", help="output directory")
    synth.add_argument("--k", type=candidate_count, default=SYNTH_K, help="candidates per node (default: %(default)s)")
    synth.add_argument("--kept", type=positive_int, default=SYNTH_KEPT, metavar="M",
                       help="ids kept per row (default: %(default)s)")
    synth.add_argument("--family", default=SYNTH_FAMILY, metavar="SPEC",
                       help="synthetic pair family, as resispec sim --source (default: %(default)s)")
    synth.add_argument("--seed", type=nonneg_seed, default=0, help="seed (default: %(default)s)")
    synth.add_argument("--rows-per-file", type=positive_int, default=SYNTH_ROWS_PER_FILE, metavar="R",
                       help="rows per Parquet file (default: %(default)s)")
    synth.add_argument("--rows-per-group", type=positive_int, default=ROWS_PER_GROUP, metavar="R",
                       help="Parquet row-group size (default: %(default)s)")
    synth.add_argument("--first-node-id", type=nonneg_seed, default=0, metavar="ID",
                       help="node id of the first row (sets audited together need distinct ids; default: 0)")
    synth.add_argument("--workers", type=positive_int, default=1, metavar="W",
                       help="processes writing files in parallel (default: %(default)s)")
    synth.set_defaults(handler=run_synth)


def run_convert(args: argparse.Namespace) -> int:
    from resispec.sim.serving.convert import npz_to_parquet, parquet_to_npz

    if args.source.endswith(".npz"):
        if not args.verifier:
            raise ValueError("--verifier: name the verifier that made the log's decisions")
        out = npz_to_parquet(args.source, args.out, args.verifier, args.draft, rows_per_group=args.rows_per_group)
    else:
        out = parquet_to_npz(args.source, args.out)
    print(f"wrote {out}")
    return 0


def run_synth(args: argparse.Namespace) -> int:
    from resispec.sim.serving.synth import SynthSpec, synth

    spec = SynthSpec(rows=args.rows, verifier=args.verifier, k=args.k, kept=args.kept, family=args.family,
                     seed=args.seed, rows_per_file=args.rows_per_file, rows_per_group=args.rows_per_group,
                     first_node_id=args.first_node_id)
    from resispec.progress import Progress

    with Progress(total=spec.rows, desc="synth", unit="rows", unit_scale=True) as bar:
        files = synth(spec, Path(args.out), args.workers, bar.update)
    print(f"wrote {len(files)} file(s) under {args.out}")
    return 0
