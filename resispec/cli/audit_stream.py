"""``resispec audit-stream GENERATOR``: is this decoder's text distributed as the target?

Exit status 0 iff the audit passes, 1 if it rejects, 2 on a usage error (one line on stderr).
"""

from __future__ import annotations

import argparse
import json

from resispec.cli.arguments import (
    check_device,
    device,
    nonneg_seed,
    positive_int,
    significance,
    temperature,
    thread_count,
    top_p,
)
from resispec.cli.generate import parse_tree
from resispec.cli.model_options import add_target_argument, add_target_compute_argument
from resispec.cli.output import strict_json

DEFAULT_SEQUENCES = 24
DEFAULT_MAX_NEW_TOKENS = 64


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "audit-stream", help="sequence-level exactness audit of any decoder's output against the target",
        description="Scores every generated sequence with the target by teacher forcing and tests the randomized "
                    "PIT of every generated token for uniformity (KS + chi-square). Exit status 0 iff the audit "
                    "passes, 1 if it rejects, 2 on a usage error.")
    parser.add_argument("generator", help="engine:VERIFIER, hf, hf-assisted, hf-ensemble:W or jsonl:FILE")
    add_target_argument(parser)
    add_target_compute_argument(parser)
    parser.add_argument("--draft", default=None,
                        help="draft name or checkpoint PATH for engine:* and hf-assisted "
                             "(default: the engine's default)")
    parser.add_argument("--tree", type=parse_tree, default=(4, 2, 2, 1), help="engine:* branching per depth")
    parser.add_argument("--prompts", default=None, metavar="FILE",
                        help="user messages: a .json list of strings, else one per line (default: a built-in set of 6)")
    parser.add_argument("--sequences", type=positive_int, default=DEFAULT_SEQUENCES, metavar="N",
                        help="sequences generated, over the prompts in turn (default: %(default)s)")
    parser.add_argument("--max-new-tokens", type=positive_int, default=DEFAULT_MAX_NEW_TOKENS, metavar="N")
    parser.add_argument("--temperature", type=temperature, default=1.0, help="0 = greedy")
    parser.add_argument("--top-k", type=positive_int, default=None)
    parser.add_argument("--top-p", type=top_p, default=None)
    parser.add_argument("--seed", type=nonneg_seed, default=0)
    parser.add_argument("--alpha", type=significance, default=None, help="significance level (default: 1e-3)")
    parser.add_argument("--device", type=device, default="cpu")
    parser.add_argument("--threads", type=thread_count, default=2, help="torch CPU threads")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    parser.set_defaults(handler=run)


def read_prompts(path: str) -> list[str]:
    """User messages from ``path``: a JSON list of strings for a ``.json`` file, else one per non-blank line."""
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as error:
        raise ValueError(f"prompts: cannot read {path}: {error.strerror}") from None
    if path.lower().endswith(".json"):
        try:
            prompts = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"prompts: {path} is not valid JSON ({error})") from None
        if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
            raise ValueError(f"prompts: {path} must hold a JSON list of strings")
    else:
        prompts = [line for line in text.splitlines() if line.strip()]
    if not prompts:
        raise ValueError(f"prompts: {path} holds no prompts")
    return prompts


def run(args: argparse.Namespace) -> int:
    import torch

    from resispec.audit import DEFAULT_ALPHA, Verdict
    from resispec.engine.audit.generators import generate_sequences, parse_generator, read_jsonl
    from resispec.engine.audit.stream_audit import audit_pit, check_sequences, law_description, stream_pit
    from resispec.engine.data.prompts import load_bench_prompts as load_prompts
    from resispec.engine.decode.generation import prompt_ids
    from resispec.engine.decode.processing import Sampling
    from resispec.engine.drafts.registry import DEFAULT_DRAFT
    from resispec.engine.model.models import check_target_compute, load_target, target_config
    from resispec.progress import Progress, progress

    spec = parse_generator(args.generator)
    sampling = Sampling(args.temperature, args.top_k, args.top_p)
    alpha = DEFAULT_ALPHA if args.alpha is None else args.alpha
    messages = read_prompts(args.prompts) if args.prompts else load_prompts()
    recorded = read_jsonl(spec.argument, sampling) if spec.kind == "jsonl" else None  # every record checked first
    check_device(args.device)
    check_target_compute(args.target_compute, args.device, path=args.target)
    if recorded is not None:  # the context and the vocabulary are the target's config's: no weights needed
        recorded = check_sequences(recorded, sampling, target_config(args.target))
    torch.set_num_threads(args.threads)
    model, tokenizer = load_target(device=args.device, path=args.target, compute=args.target_compute)
    draft = args.draft or DEFAULT_DRAFT
    if recorded is not None:
        sequences = recorded
    else:
        prompts = [prompt_ids(tokenizer, message, chat=True) for message in messages]
        generated = generate_sequences(spec, model, prompts, args.sequences, args.max_new_tokens, sampling, args.seed,
                                       draft, args.tree, tokenizer.eos_token_id)
        sequences = list(progress(generated, total=args.sequences, desc="generate", unit="seq"))
    with Progress(total=len(sequences), desc="score", unit="seq") as bar:
        pit = stream_pit(model, sequences, sampling, args.seed, progress=bar.update)
    laws = sorted({law_description(s.sampling) for s in sequences})
    result = audit_pit(pit, "; ".join(laws), alpha)
    record = {
        "generator": args.generator,
        "target": args.target or "SmolLM2-135M-Instruct (built in)", "target_compute": args.target_compute,
        "draft": draft if spec.kind in ("engine", "hf-assisted", "hf-ensemble") else None,
        "sequences": pit.sequences, "tokens": int(pit.values.size), "impossible_tokens": pit.impossible,
        "laws": laws, "verdict": result.verdict.value, "audit": result.to_dict(),
        "served_logprobs": pit.served.to_dict() if pit.served.tokens or pit.served.nulls else None,
    }
    print(strict_json(record) if args.json else report(record))
    result.require_tested()
    return 0 if result.verdict is Verdict.PASS else 1


def report(record: dict) -> str:
    """The human-readable report of one ``audit-stream`` run."""
    from resispec.audit.pit import MIN_TESTED_VALUES

    audit = record["audit"]
    draft = f", draft {record['draft']}" if record["draft"] else ""
    return "\n".join([
        f"generator {record['generator']}{draft}; target {record['target']}, computed {record['target_compute']}",
        f"law audited: {'; '.join(record['laws'])} (recomputed from the target by teacher forcing; the generator's "
        f"own probabilities are not used)",
        f"{record['sequences']} sequences, {record['tokens']} tokens, {record['impossible_tokens']} impossible under "
        f"this law",
        f"randomized PIT: KS p = {audit['ks_pvalue']:.3g}, "
        f"chi2 p = {audit['chi2_pvalue']:.3g} ({audit['chi2_df']} df), "
        f"alpha {audit['alpha']:g} (Bonferroni over the two)",
        f"detects a TV of the PIT law from uniform >= {audit['min_detectable_tv']:.3f} with power 0.9"
        if audit["tested"] else f"detects no TV of the PIT law from uniform: untested, {record['tokens']} tokens "
                                f"(at least {MIN_TESTED_VALUES} needed)",
        *([] if record.get("served_logprobs") is None else [_served_line(record["served_logprobs"])]),
        f"verdict: {record['verdict']}",
    ])


def _served_line(served: dict) -> str:
    """The served logprobs' line of the report (``resispec.engine.audit.served_logprobs``)."""
    if served["problem"]:
        return f"{served['problem']}: UNTESTED, nothing this stream serves is certified"
    return (f"served logprobs: {served['tokens']} tokens agree with the target within {served['max_difference']:.3g} "
            f"nats (tolerance {served['tolerance']:g})")
