"""Logging real-model rounds for ``sim.rounds``: the drafted tree, p at every node, q at every
internal node, of every round a sequence-level driver decodes.

A driver (``traversal`` for i.i.d. trees, ``traversal_wor`` for WOR trees, ``block`` for chains)
decodes the benchmark prompts (held out from draft training, ``engine.bench_engine.load_prompts``)
with the real target and a draft (``--draft``, default the engine's), cycling through the prompts
with seeds ``seed, seed + 1, ...`` until ``--rounds`` rounds are logged. Every round goes to an
``engine.round_log.RoundLog`` (sparse rows, ``--keep`` ids each). All the drivers are exact, so
the logged rounds follow the target's text distribution whichever exact driver decodes. The log is
written to ``--log`` and scored by ``sim.rounds`` (the same as ``resispec sim rounds LOG``).

Run: ``python -m engine.round_replay --tree 4,2,2,1 --drafting iid --rounds 400 --log /tmp/iid.npz``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import torch
from tqdm import tqdm

from engine.bench_engine import load_prompts
from engine.decoding import Decoder
from engine.drafts.registry import DEFAULT_DRAFT, make_draft, resolve_draft_name
from engine.generation import prompt_ids
from engine.node_log import DEFAULT_KEEP
from engine.processing import Sampling
from engine.round_log import LoggingRound, RoundLog
from resispec.formats.pairs import LoggedPairs
from sim.rounds import score_log, summarise, table

DRIVERS = {"iid": "traversal", "wor": "traversal_wor", "chain": "block"}


def log_rounds(model, tokenizer, drafting: str, branching: tuple[int, ...], prompts: Sequence[str], rounds: int,
               max_new_tokens: int, seed: int = 0, keep: int | None = DEFAULT_KEEP,
               draft_name: str = DEFAULT_DRAFT) -> LoggedPairs:
    """At least ``rounds`` rounds (whole generations) decoded by ``DRIVERS[drafting]``, logged."""
    draft = make_draft(draft_name, model)
    log = RoundLog(model.config.vocab_size, "wor" if drafting == "wor" else "iid", keep,
                   {"model": "SmolLM2-135M-Instruct", "draft_model": resolve_draft_name(draft_name, model),
                    "temperature": 1.0,
                    "note": f"engine.round_replay: tree {','.join(map(str, branching))}, driver {DRIVERS[drafting]}, "
                            f"seed {seed}"})
    with tqdm(total=rounds, desc=f"rounds ({drafting}, tree {','.join(map(str, branching))})", unit="round",
              file=sys.stderr) as bar:
        generation = 0
        while log.rounds < rounds:
            decoder = Decoder(model, draft, DRIVERS[drafting], branching, Sampling(1.0), seed=seed + generation)
            decoder.round_verifier = LoggingRound(decoder.round_verifier, log)
            prompt = prompts[generation % len(prompts)]
            before = log.rounds
            list(decoder.generate(prompt_ids(tokenizer, prompt, chat=True), max_new_tokens, tokenizer.eos_token_id))
            bar.update(log.rounds - before)
            generation += 1
    return log.logged()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default="4,2,2,1", help="branching per depth (a chain for --drafting chain)")
    parser.add_argument("--drafting", choices=list(DRIVERS), default="iid")
    parser.add_argument("--rounds", type=int, default=200, help="log at least this many rounds")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--prompts", type=int, default=6, help="how many benchmark prompts")
    parser.add_argument("--keep", type=int, default=DEFAULT_KEEP, help="kept ids per row")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--draft", default=DEFAULT_DRAFT, help="draft name (engine.drafts.registry)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--log", required=True, help="write the round log (.npz) here")
    args = parser.parse_args(argv)
    from engine.models import load_target
    from resispec.formats.pairs import write_logged

    torch.set_num_threads(args.threads)
    branching = tuple(int(b) for b in args.tree.split(","))
    model, tokenizer = load_target()
    logged = log_rounds(model, tokenizer, args.drafting, branching, load_prompts()[: args.prompts], args.rounds,
                        args.max_new_tokens, args.seed, args.keep, args.draft)
    write_logged(args.log, logged)
    kind, accepted = score_log(logged)
    print(table(kind, summarise(accepted, next(iter(accepted)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
