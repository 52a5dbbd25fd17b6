"""Logging real-model rounds for ``resispec.sim.rounds``: the drafted tree, p at every node, q at every
internal node, of every round a sequence-level driver decodes.

A driver (``traversal`` for i.i.d. trees, ``traversal_wor`` for WOR trees, ``block`` for chains)
decodes the benchmark prompts (held out from draft training, ``resispec.engine.data.prompts.load_bench_prompts``)
with the real target and a draft (``--draft``, default the engine's), cycling through the prompts
with seeds ``seed, seed + 1, ...`` until ``--rounds`` rounds are logged. Every round goes to an
``resispec.engine.logs.round_log.RoundLog`` (sparse rows, ``--keep`` ids each). All the drivers are exact, so
the logged rounds follow the target's text distribution whichever exact driver decodes. ``resispec replay``
writes the log and scores it with ``resispec.sim.rounds`` (the same as ``resispec sim rounds LOG``).

Run: ``resispec replay --tree 4,2,2,1 --drafting iid --rounds 400 --log /tmp/iid.npz``.
"""

from __future__ import annotations

from collections.abc import Sequence

from resispec.engine.decode.decoding import Decoder
from resispec.engine.decode.generation import prompt_ids
from resispec.engine.decode.processing import Sampling
from resispec.engine.drafts.registry import DEFAULT_DRAFT, make_draft, resolve_draft_name
from resispec.engine.logs.node_log import DEFAULT_KEEP
from resispec.engine.logs.round_log import LoggingRound, RoundLog
from resispec.formats.pairs import LoggedPairs
from resispec.progress import Progress

DRIVERS = {"iid": "traversal", "wor": "traversal_wor", "chain": "block"}


def log_rounds(model, tokenizer, drafting: str, branching: tuple[int, ...], prompts: Sequence[str], rounds: int,
               max_new_tokens: int, seed: int = 0, keep: int | None = DEFAULT_KEEP,
               draft_name: str = DEFAULT_DRAFT) -> LoggedPairs:
    """At least ``rounds`` rounds (whole generations) decoded by ``DRIVERS[drafting]``, logged."""
    draft = make_draft(draft_name, model)
    log = RoundLog(model.config.vocab_size, "wor" if drafting == "wor" else "iid", keep,
                   {"model": "SmolLM2-135M-Instruct", "draft_model": resolve_draft_name(draft_name, model),
                    "temperature": 1.0,
                    "note": f"resispec replay: tree {','.join(map(str, branching))}, driver {DRIVERS[drafting]}, "
                            f"seed {seed}"})
    with Progress(total=rounds, desc=f"rounds ({drafting}, tree {','.join(map(str, branching))})",
                  unit="round") as bar:
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
