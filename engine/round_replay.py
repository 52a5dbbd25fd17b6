"""Expected accepted tokens per round of many verifiers on the *same* real-model rounds.

A sequence-level driver (``traversal`` for i.i.d. trees, ``traversal_wor`` for WOR trees, ``block``
for chains) decodes the benchmark prompts with the real target and the default draft; at every round
the drafted tree, p at every node and q at every internal node go to each measured verifier's exact
conditional law (``resispec.sequence``: its verification randomness integrated out), whose
``E[accepted draft tokens | tree]`` is recorded. Every verifier is scored on identical trees, so the
differences are paired (mean and standard error over rounds). All the verifiers are exact, so the
rounds the driver visits follow the target's text distribution whichever exact driver is used.

This replays rounds with the real model instead of reading logged trees (the logged format of
``engine.node_log`` has no parent links).

Run: ``python -m engine.round_replay --tree 4,2,2,1 --drafting iid [--max-new-tokens 32] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import numpy as np
import torch
from tqdm import tqdm

from engine.bench_engine import load_prompts
from engine.decoding import Decoder
from engine.drafts.registry import DEFAULT_DRAFT, make_draft
from engine.generation import prompt_ids
from engine.processing import Sampling
from engine.round_verification import RoundVerification
from resispec.sequence import get_round_verifier
from resispec.sequence.tree import round_tree

DRIVERS = {"iid": "traversal", "wor": "traversal_wor", "chain": "block"}
MEASURED = {
    "iid": ("rrs", "resispec", "pooled", "traversal", "traversal_resispec"),
    "wor": ("rrs_wor", "resispec_wor", "traversal_wor", "traversal_resispec_wor"),
    "chain": ("sps", "block", "traversal_resispec"),
}


class RecordingRound:
    """The driver's round verification, recording every measured verifier's expected accepted tokens."""

    def __init__(self, driver: RoundVerification, names: Sequence[str], bar: tqdm) -> None:
        self.driver = driver
        self.verifiers = {name: get_round_verifier(name) for name in names}
        self.accepted: dict[str, list[float]] = {name: [] for name in names}
        self.bar = bar

    def __call__(self, tree, tokens: torch.Tensor, p: torch.Tensor, q: torch.Tensor,
                 rng: np.random.Generator) -> tuple[int, int]:
        drafted = round_tree(tree.parents.numpy(), tokens.cpu().numpy(), p.shape[-1])
        p_np, q_np = p.cpu().numpy(), q.cpu().numpy()
        for name, verifier in self.verifiers.items():
            self.accepted[name].append(verifier.law(drafted, p_np, q_np).expected_accepted(drafted))
        self.bar.update(1)
        return self.driver(tree, tokens, p, q, rng)


def replay(model, tokenizer, drafting: str, branching: tuple[int, ...], prompts: Sequence[str],
           max_new_tokens: int, seed: int = 0, names: Sequence[str] | None = None) -> dict[str, list[float]]:
    """Per measured verifier (``names``, default ``MEASURED[drafting]``), ``E[accepted | tree]`` for
    every round the driver decodes."""
    draft = make_draft(DEFAULT_DRAFT, model)
    bar = tqdm(desc=f"rounds ({drafting}, tree {','.join(map(str, branching))})", unit="round", file=sys.stderr)
    recorder: RecordingRound | None = None
    for index, prompt in enumerate(prompts):
        decoder = Decoder(model, draft, DRIVERS[drafting], branching, Sampling(1.0), seed=seed + index)
        if recorder is None:
            recorder = RecordingRound(decoder.round_verifier, names or MEASURED[drafting], bar)
        recorder.driver = decoder.round_verifier
        decoder.round_verifier = recorder
        list(decoder.generate(prompt_ids(tokenizer, prompt, chat=True), max_new_tokens, tokenizer.eos_token_id))
    bar.close()
    return recorder.accepted


def summarise(accepted: dict[str, list[float]], baseline: str) -> dict[str, dict[str, float]]:
    """Mean and standard error per verifier, and the paired difference against ``baseline``."""
    base = np.array(accepted[baseline])
    out = {}
    for name, values in accepted.items():
        values = np.array(values)
        diff = values - base
        out[name] = {"mean": float(values.mean()), "se": float(values.std(ddof=1) / np.sqrt(values.size)),
                     f"minus_{baseline}": float(diff.mean()),
                     f"minus_{baseline}_se": float(diff.std(ddof=1) / np.sqrt(diff.size)), "rounds": int(values.size)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default="4,2,2,1", help="branching per depth (a chain for --drafting chain)")
    parser.add_argument("--drafting", choices=list(DRIVERS), default="iid")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--prompts", type=int, default=6, help="how many benchmark prompts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verifiers", nargs="+", default=None,
                        help="verifiers to score, the first is the baseline (default: the drafting's set)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=None, help="write the JSON summary here")
    args = parser.parse_args(argv)
    from engine.models import load_target

    torch.set_num_threads(args.threads)
    branching = tuple(int(b) for b in args.tree.split(","))
    model, tokenizer = load_target()
    accepted = replay(model, tokenizer, args.drafting, branching, load_prompts()[: args.prompts],
                      args.max_new_tokens, args.seed, args.verifiers)
    names = args.verifiers or MEASURED[args.drafting]
    record = {"tree": args.tree, "drafting": args.drafting, "max_new_tokens": args.max_new_tokens,
              "prompts": args.prompts, "seed": args.seed, "draft": DEFAULT_DRAFT, "temperature": 1.0,
              "verifiers": summarise(accepted, names[0])}
    text = json.dumps(record, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
