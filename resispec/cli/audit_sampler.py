"""``resispec audit-sampler FILE.py:FUNCTION``: the exactness audit of any speculative sampler (a plain callable);
``resispec audit-sampler vllm:rejection``: the installed vLLM's rejection sampler
(``resispec.integrations.vllm.target``, run with the interpreter of vLLM's environment; docs/vllm.md).

Exit status 0 iff the audit passes, 1 if it rejects (a statistical rejection, a broken output contract, or an
edge probe that finds a token with p = 0 or an id out of range), 2 on a usage error (an unimportable file, a
function that raises, hangs or returns the wrong shape, an audit that tested nothing): one line on stderr.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from typing import Any

from resispec.cli.arguments import (
    any_number,
    audit_samples,
    branching,
    fail,
    integer_in,
    nonneg_seed,
    positive_int,
    positive_number,
    temperature,
    thread_count,
    time_limit,
    top_p,
)
from resispec.cli.output import strict_json

small_count = integer_in(1, 8, what="a count")
token_id = integer_in(0, what="a token id")


def logit_bias(text: str) -> tuple[int, float]:
    """``ID:BIAS``, e.g. ``2:1.5``."""
    token, _, bias = text.partition(":")
    if not _:
        fail(f"expected ID:BIAS (e.g. 2:1.5), got {text!r}")
    return token_id(token), any_number(bias)


def register(subparsers: argparse._SubParsersAction) -> None:
    from resispec.audit.sampler.contract import ARRAYS, DTYPES, ENGINE_SCHEMES, EXTRAS, INPUTS, LEVELS, Q_LAYOUTS
    from resispec.audit.sampler.row_parameters import VARY
    from resispec.audit.sampling import DEFAULT_SAMPLES
    from resispec.drafting import DRAFTING_SCHEMES

    parser = subparsers.add_parser(
        "audit-sampler", help="exactness audit of any speculative sampler given as FILE.py:FUNCTION",
        description="Drafts with the claimed rule, hands FUNCTION the unprocessed model in the contract's layout "
                    "(docs/audit_sampler.md), tests its output against the processed target. Exit status 0 iff "
                    "the audit passes, 1 if it rejects, 2 on a usage error.")
    parser.add_argument("sampler", metavar="FILE.py:FUNCTION",
                        help="the sampler: a function in a Python file, or a built-in target: vllm:rejection (the "
                             "installed vLLM's; sets --level chain, torch float32 logits, extras generators lengths "
                             "processing)")
    parser.add_argument("--level", choices=LEVELS, default="node", help="node, chain or tree (default: %(default)s)")
    parser.add_argument("--k", type=small_count, default=None,
                        help="node: candidates per node (default: the one count the sampler takes; required when "
                             "it takes several)")
    parser.add_argument("--gamma", type=small_count, default=4, help="chain: draft length (default: %(default)s)")
    parser.add_argument("--branching", type=branching, default=(2, 2), metavar="B1,B2,...",
                        help="tree: children per node at each depth (default: 2,2)")
    parser.add_argument("--drafting", choices=[*DRAFTING_SCHEMES, *ENGINE_SCHEMES], default="iid",
                        help="the claimed drafting rule, or engine: the sampler drafts itself (a tree's siblings "
                             "i.i.d.; engine-wor: a tree's siblings without replacement; default: %(default)s)")
    parser.add_argument("--rule", default=None, metavar="NAME",
                        help="a zoo or round verifier whose exact acceptance the sampler claims (e.g. sps, rrs)")
    parser.add_argument("--q-layout", choices=Q_LAYOUTS, default="paths",
                        help="tree: q per path and depth, or one row per parent (default: %(default)s)")
    parser.add_argument("--arrays", choices=ARRAYS, default="numpy", help="(default: %(default)s)")
    parser.add_argument("--dtype", choices=DTYPES, default="float64", help="(default: %(default)s)")
    parser.add_argument("--inputs", choices=INPUTS, default="probs", help="(default: %(default)s)")
    parser.add_argument("--temperature", type=temperature, default=1.0, help="claimed temperature (default: 1)")
    parser.add_argument("--top-k", type=positive_int, default=None, help="claimed top-k")
    parser.add_argument("--top-p", type=top_p, default=None, help="claimed top-p")
    claims = parser.add_argument_group("more processing claims (resispec.processing; penalties and --min-tokens "
                                       "need --extras history)")
    claims.add_argument("--min-p", type=top_p, default=None, metavar="P", help="claimed min-p")
    claims.add_argument("--logit-bias", type=logit_bias, nargs="+", default=[], metavar="ID:BIAS",
                        help="claimed logit biases")
    claims.add_argument("--repetition-penalty", type=positive_number, default=1.0, metavar="R",
                        help="claimed repetition penalty (needs --inputs logits or target-logits)")
    claims.add_argument("--presence-penalty", type=any_number, default=0.0, metavar="A")
    claims.add_argument("--frequency-penalty", type=any_number, default=0.0, metavar="F")
    claims.add_argument("--banned", type=token_id, nargs="+", default=[], metavar="ID", help="banned token ids")
    claims.add_argument("--allowed", type=token_id, nargs="+", default=None, metavar="ID",
                        help="the only token ids allowed (a grammar's mask)")
    claims.add_argument("--min-tokens", type=integer_in(0, what="a count"), default=0, metavar="N",
                        help="EOS held back until N tokens were generated (with --eos)")
    claims.add_argument("--eos", type=token_id, default=None, metavar="ID", help="the EOS id --min-tokens holds back")
    parser.add_argument("--extras", nargs="+", choices=EXTRAS, default=[], metavar="EXTRA",
                        help=f"per-row keyword arguments FUNCTION takes: {', '.join(EXTRAS)}")
    parser.add_argument("--vary", nargs="+", choices=VARY, default=None, metavar="GROUP",
                        help=f"with --extras processing: the parameter groups rows of one call differ in: "
                             f"{', '.join(VARY)} (default: sampling; penalties and mask need --extras history)")
    parser.add_argument("--probe-edges", action="store_true",
                        help="force every uniform to the edges of [0, 1) and check the output contract")
    parser.add_argument("--samples", type=audit_samples, default=DEFAULT_SAMPLES, metavar="N",
                        help="samples per context (default: %(default)s)")
    parser.add_argument("--seed", type=nonneg_seed, default=0, metavar="S", help="(default: %(default)s)")
    parser.add_argument("--time-limit", type=time_limit, default=60.0, metavar="SECONDS",
                        help="per call of FUNCTION (default: %(default)s)")
    parser.add_argument("--threads", type=thread_count, default=1,
                        help="torch CPU threads, if torch is installed (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    parser.set_defaults(handler=run)


def claimed_processing(args: argparse.Namespace) -> Any:
    """The options' processing claims as one ``resispec.processing.Processing`` (``ValueError`` naming a claim)."""
    from resispec.processing import Processing

    return Processing(args.temperature, args.top_k, args.top_p, args.min_p, tuple(args.logit_bias),
                      args.repetition_penalty, args.presence_penalty, args.frequency_penalty, tuple(args.banned),
                      None if args.allowed is None else tuple(args.allowed), args.min_tokens, args.eos)


BUILTIN_PREFIX = "vllm:"


def load_builtin(args: argparse.Namespace) -> Any:
    """The built-in target ``vllm:NAME`` under the claimed processing; sets ``args``' contract options to the
    target's (``resispec.integrations.vllm.target.CONTRACT``); ``ValueError`` (one line) without vLLM."""
    if importlib.util.find_spec("vllm") is None:
        raise ValueError(f"sampler: {args.sampler} audits the installed vLLM, which this interpreter "
                         f"({sys.executable}) cannot import; run resispec with the interpreter of vLLM's "
                         "environment (docs/vllm.md)")
    from resispec.integrations.vllm.target import CONTRACT, builtin_target, check_claims

    check_claims(claimed_processing(args))
    if set(args.vary or ()) - {"sampling"}:
        raise ValueError("vary: the built-in vLLM targets vary temperature, top-k and top-p per row only "
                         "(--vary sampling)")
    for name, value in CONTRACT.items():
        setattr(args, name, value)
    return builtin_target(args.sampler[len(BUILTIN_PREFIX):])


def run(args: argparse.Namespace) -> int:
    from resispec.audit import Verdict
    from resispec.audit.sampler import SamplerError, audit_sampler

    sampler = load_builtin(args) if args.sampler.startswith(BUILTIN_PREFIX) else args.sampler
    try:
        report = audit_sampler(
            sampler, args.level, k=args.k, gamma=args.gamma, branching=args.branching, drafting=args.drafting,
            rule=args.rule, arrays=args.arrays, dtype=args.dtype, inputs=args.inputs,
            processing=claimed_processing(args), extras=args.extras, vary=args.vary, q_layout=args.q_layout,
            samples=args.samples, seed=args.seed, probe_edges=args.probe_edges, time_limit=args.time_limit,
            threads=args.threads)
    except SamplerError as error:  # its line, then where in the sampler's own file and on what it failed
        print(f"resispec audit-sampler: error: {' '.join(str(error).split())}", file=sys.stderr)
        for line in getattr(error, "details", []):
            print(line, file=sys.stderr)
        return 2
    print(strict_json(report.to_dict()) if args.json else report.format())
    if report.verdict is Verdict.UNTESTED:
        print("resispec audit-sampler: error: no test had a degree of freedom, so the audit saw nothing; use more "
              "samples or contexts where the sampler's output varies", file=sys.stderr)
        return 2
    return 0 if report.passed else 1
