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
from pathlib import Path
from typing import Any

from resispec.cli.arguments import (
    branching,
    integer_in,
    nonneg_seed,
    positive_int,
    positive_seconds,
    temperature,
    top_p,
)
from resispec.cli.output import strict_json

small_count = integer_in(1, 8, what="a count")


def register(subparsers: argparse._SubParsersAction) -> None:
    from resispec.audit.sampler.contract import ARRAYS, DTYPES, EXTRAS, INPUTS, LEVELS
    from resispec.audit.sampling import DEFAULT_SAMPLES
    from resispec.drafting import DRAFTING_SCHEMES

    parser = subparsers.add_parser(
        "audit-sampler", help="exactness audit of any speculative sampler given as FILE.py:FUNCTION",
        description="Drafts with the claimed rule, hands FUNCTION the unprocessed model in the contract's layout "
                    "(docs/audit_sampler.md), tests its output against the processed target. Exit status 0 iff "
                    "the audit passes, 1 if it rejects, 2 on a usage error.")
    parser.add_argument("sampler", metavar="FILE.py:FUNCTION",
                        help="the sampler: a function in a Python file, or a built-in target: vllm:rejection (the "
                             "installed vLLM's; sets --level chain, torch float32 logits, extras generators lengths)")
    parser.add_argument("--level", choices=LEVELS, default="node", help="node, chain or tree (default: %(default)s)")
    parser.add_argument("--k", type=small_count, default=2, help="node: candidates per node (default: %(default)s)")
    parser.add_argument("--gamma", type=small_count, default=4, help="chain: draft length (default: %(default)s)")
    parser.add_argument("--branching", type=branching, default=(2, 2), metavar="B1,B2,...",
                        help="tree: children per node at each depth (default: 2,2)")
    parser.add_argument("--drafting", choices=list(DRAFTING_SCHEMES), default="iid",
                        help="the claimed drafting rule (default: %(default)s)")
    parser.add_argument("--rule", default=None, metavar="NAME",
                        help="a zoo or round verifier whose exact acceptance the sampler claims (e.g. sps, rrs)")
    parser.add_argument("--arrays", choices=ARRAYS, default="numpy", help="(default: %(default)s)")
    parser.add_argument("--dtype", choices=DTYPES, default="float64", help="(default: %(default)s)")
    parser.add_argument("--inputs", choices=INPUTS, default="probs", help="(default: %(default)s)")
    parser.add_argument("--temperature", type=temperature, default=1.0, help="claimed temperature (default: 1)")
    parser.add_argument("--top-k", type=positive_int, default=None, help="claimed top-k")
    parser.add_argument("--top-p", type=top_p, default=None, help="claimed top-p")
    parser.add_argument("--extras", nargs="+", choices=EXTRAS, default=[], metavar="EXTRA",
                        help=f"per-row keyword arguments FUNCTION takes: {', '.join(EXTRAS)}")
    parser.add_argument("--probe-edges", action="store_true",
                        help="force every uniform to the edges of [0, 1) and check the output contract")
    parser.add_argument("--samples", type=positive_int, default=DEFAULT_SAMPLES, metavar="N",
                        help="samples per context (default: %(default)s)")
    parser.add_argument("--seed", type=nonneg_seed, default=0, metavar="S", help="(default: %(default)s)")
    parser.add_argument("--time-limit", type=positive_seconds, default=60.0, metavar="SECONDS",
                        help="per call of FUNCTION (default: %(default)s)")
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="torch CPU threads, if torch is installed (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    parser.set_defaults(handler=run)


def load_sampler(spec: str) -> Any:
    """The function ``FUNCTION`` of ``FILE.py:FUNCTION``; ``ValueError`` in one line naming the problem."""
    path, _, name = spec.rpartition(":")
    if not path or not name:
        raise ValueError(f"sampler: expected FILE.py:FUNCTION, got {spec!r}")
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"sampler: no file {path}")
    module_spec = importlib.util.spec_from_file_location(f"audited_sampler_{file.stem}", file)
    if module_spec is None or module_spec.loader is None:
        raise ValueError(f"sampler: {path} is not a Python file")
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, str(file.resolve().parent))
    try:
        module_spec.loader.exec_module(module)
    except Exception as error:  # the user's file: any failure to import it is their mistake, in one line
        raise ValueError(f"sampler: cannot import {path}: {type(error).__name__}: {error}") from None
    finally:
        sys.path.pop(0)
    function = getattr(module, name, None)
    if not callable(function):
        raise ValueError(f"sampler: {path} has no function {name!r}")
    return function


BUILTIN_PREFIX = "vllm:"


def load_builtin(args: argparse.Namespace) -> Any:
    """The built-in target ``vllm:NAME`` under the claimed processing; sets ``args``' contract options to the
    target's (``resispec.integrations.vllm.target.CONTRACT``); ``ValueError`` (one line) without vLLM."""
    if importlib.util.find_spec("vllm") is None:
        raise ValueError(f"sampler: {args.sampler} audits the installed vLLM, which this interpreter "
                         f"({sys.executable}) cannot import; run resispec with the interpreter of vLLM's "
                         "environment (docs/vllm.md)")
    from resispec.integrations.vllm.target import CONTRACT, builtin_target

    for name, value in CONTRACT.items():
        setattr(args, name, value)
    return builtin_target(args.sampler[len(BUILTIN_PREFIX):], args.temperature, args.top_k, args.top_p)


def run(args: argparse.Namespace) -> int:
    from resispec.audit.sampler import audit_sampler

    fn = load_builtin(args) if args.sampler.startswith(BUILTIN_PREFIX) else load_sampler(args.sampler)
    if importlib.util.find_spec("torch") is not None and args.arrays == "torch":
        import torch

        torch.set_num_threads(args.threads)
    report = audit_sampler(
        fn, args.level, k=args.k, gamma=args.gamma, branching=args.branching, drafting=args.drafting, rule=args.rule,
        arrays=args.arrays, dtype=args.dtype, inputs=args.inputs, temperature=args.temperature, top_k=args.top_k,
        top_p=args.top_p, extras=args.extras, samples=args.samples, seed=args.seed, probe_edges=args.probe_edges,
        time_limit=args.time_limit)
    print(strict_json(report.to_dict()) if args.json else report.format())
    if report.verdict == "NOT TESTED":
        print("resispec audit-sampler: error: no test had a degree of freedom, so the audit saw nothing; use more "
              "samples or contexts where the sampler's output varies", file=sys.stderr)
        return 2
    return 0 if report.passed else 1
