"""``python -m resispec.integrations.vllm.bench``: what the plugin costs and gains inside one vLLM, interleaved.

One ``LLM`` (vLLM's usual processes) decodes the workload of ``generate`` ``--rounds`` times per arm, the arms
alternating round by round (so drift in the machine's load hits both alike); each switch reaches vLLM's workers
through ``LLM.collective_rpc`` (a function of this module, hence ``VLLM_ALLOW_INSECURE_SERIALIZATION=1``, set here
for this local run):

- ``--compare hooks``: the audit hooks on (logging into ``--audit-dir``) against off: tokens/s and its ratio, and
  the hooks' own share of the wall time (seconds the worker spent in them, over the round's: robust to the noise of
  a shared machine, which moves both alike);
- ``--compare verifier``: vLLM's own rule against ``--verifier`` (``block`` or ``sps``), same proposer: tokens
  per step (accepted tokens per verification + 1, from vLLM's own counters) and tokens/s.

Prints one JSON line per round (stderr) and a JSON summary (stdout): per arm the median tokens/s and the pooled
tokens per step, and the ratio of the medians (second arm / first).
"""

from __future__ import annotations

import json
import os
import statistics
import sys

from resispec.integrations.vllm.generate import check, make_llm, parser, run_workload


def hook_time(worker) -> float:
    """In a vLLM worker: the seconds spent in the hooks so far (``hooks.hook_seconds``)."""
    from resispec.integrations.vllm.hooks import hook_seconds

    return hook_seconds()


def switch(worker, arm: str) -> None:
    """In a vLLM worker: hooks on or off (``hooks on``, ``hooks off``), or the chain verifier named ``arm``."""
    from resispec.integrations.vllm.hooks import set_enabled
    from resispec.integrations.vllm.verifier import install_verifier

    if arm.startswith("hooks "):
        set_enabled(arm == "hooks on")
    else:
        install_verifier(arm)


def main(argv: list[str] | None = None) -> int:
    options = parser("python -m resispec.integrations.vllm.bench", __doc__)
    options.add_argument("--compare", choices=("hooks", "verifier"), required=True)
    options.add_argument("--verifier", choices=("block", "sps"), default="block")
    options.add_argument("--audit-dir", help="--compare hooks: the token log's folder")
    options.add_argument("--rounds", type=int, default=3, help="rounds per arm (default: 3)")
    args = check(options, options.parse_args(argv))
    if args.compare == "hooks" and not args.audit_dir:
        options.error("--compare hooks: needs --audit-dir")
    os.environ["VLLM_ALLOW_INSECURE_SERIALIZATION"] = "1"
    if args.compare == "hooks":
        os.environ["RESISPEC_VLLM_AUDIT_DIR"] = args.audit_dir  # the plugin installs the hooks in every worker
        arms = ("hooks off", "hooks on")
    else:
        arms = ("vllm", args.verifier)
    llm = make_llm(args)
    run_workload(llm, args)  # warm-up, not counted
    records: dict[str, list[dict]] = {arm: [] for arm in arms}
    for round_index in range(args.rounds):
        for arm in arms:
            llm.collective_rpc(switch, args=(arm,))
            before = sum(llm.collective_rpc(hook_time)) if args.compare == "hooks" else 0.0
            record = run_workload(llm, args)
            if args.compare == "hooks":  # the hooks' own time in the worker, a share of the round's wall time
                record["hook_share"] = (sum(llm.collective_rpc(hook_time)) - before) / record["seconds"]
            records[arm].append(record)
            print(json.dumps({"round": round_index, "arm": arm, **record}), file=sys.stderr, flush=True)
    summary = {"compare": args.compare, "rounds": args.rounds, "requests": args.requests,
               "max_tokens": args.max_tokens, "spec": args.spec, "gamma": args.gamma, "arms": {}}
    for arm, runs in records.items():
        entry = {"median_tokens_per_s": statistics.median(r["tokens_per_s"] for r in runs),
                 "tokens_per_s": [r["tokens_per_s"] for r in runs]}
        if args.compare == "hooks":
            entry["hook_share"] = sum(r["hook_share"] * r["seconds"] for r in runs) / sum(r["seconds"] for r in runs)
        if args.spec != "none":
            drafts = sum(r["drafts"] for r in runs)
            entry["tokens_per_step"] = 1 + sum(r["accepted_tokens"] for r in runs) / drafts if drafts else None
        summary["arms"][arm] = entry
    first, second = (summary["arms"][arm]["median_tokens_per_s"] for arm in arms)
    summary["ratio_tokens_per_s"] = second / first
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
