"""Text generation with the real target: prompt formatting, streaming, and a JSON-ready summary."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch

from resispec.audit import pit_audit
from resispec.engine.decode.adaptive import OnlineShapes
from resispec.engine.decode.calibration import Calibration, calibration_key, choose_tree, describe, refresh_calibration
from resispec.engine.decode.decoding import AUTOREGRESSIVE, Decoder, DecodeStats
from resispec.engine.decode.processing import Sampling
from resispec.engine.drafts.base import Draft
from resispec.engine.drafts.registry import DEFAULT_DRAFT, check_draft_name, make_draft, resolve_draft_name
from resispec.engine.logs.node_log import NodeLog
from resispec.engine.runtime.tree import CandidateTree
from resispec.engine.verifiers.strategy import Verification
from resispec.validation import as_count

AUTO_TREE = "auto"
"""``branching = "auto"``: the tree maximising expected tokens per second
(`resispec.engine.decode.calibration.choose_tree`),
or plain decoding where that is predicted faster."""
PLAIN = ()
"""The branching ``auto`` answers where no tree is predicted faster than plain decoding (then the loop samples
from p itself, ``verifier = "ar"``: the same law, nothing verified)."""


@dataclass
class GenerationRequest:
    """What to generate and how; ``verifier = "ar"`` is plain autoregressive sampling.

    Validated on construction, before any model loads (``ValueError`` naming the field): a non-empty
    prompt, a known verifier and draft (``check_draft_name``, no model loaded), ``auto`` or a tree the
    verifier takes (sps, block: one child per node) within ``MAX_TREE_NODES``, ``max_new_tokens >= 1``, a seed
    ``>= 0`` and a parity fraction in [0, 1].
    """

    prompt: str
    verifier: str = "resispec"
    draft: str = DEFAULT_DRAFT
    branching: tuple[int, ...] | str = AUTO_TREE
    sampling: Sampling = Sampling()
    max_new_tokens: int = 64
    seed: int = 0
    audit: bool = False
    chat: bool = True
    parity_fraction: float = 0.0
    threads: int = 2
    verification: Verification | None = field(init=False, default=None, repr=False, compare=False)
    """How to verify, resolved once from ``verifier`` on construction (None for ``"ar"``)."""

    def __post_init__(self) -> None:
        if not isinstance(self.prompt, str) or not self.prompt.strip():
            raise ValueError(f"prompt: expected a non-empty text, got {self.prompt!r}")
        as_count(self.max_new_tokens, "max_new_tokens", "new tokens")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed: expected an integer >= 0, got {self.seed!r}")
        if not 0.0 <= self.parity_fraction <= 1.0:
            raise ValueError(f"parity_fraction: must lie in [0, 1], got {self.parity_fraction}")
        if self.verifier != AUTOREGRESSIVE:
            check_draft_name(self.draft)
            self.verification = Verification.of(self.verifier)
            if self.branching != AUTO_TREE:  # branchings >= 1, at most MAX_TREE_NODES nodes; sps, block: one child
                CandidateTree.from_branching(self.branching)
                self.verification.check_branching(tuple(self.branching))


def prompt_ids(tokenizer, prompt: str, chat: bool) -> torch.Tensor:
    """long [T]: the prompt in the instruct model's chat template (or raw text), encoded with the tokenizer's
    special tokens (a transformers tokenizer or an `resispec.engine.model.chat_tokenizer.ChatTokenizer`)."""
    if chat:
        text = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                             add_generation_prompt=True)
    else:
        text = prompt
    return torch.tensor(tokenizer.encode(text), dtype=torch.long)


def check_request_fits(request: GenerationRequest, path: str | None = None) -> int:
    """The prompt's token count, once the target (the built-in one, or ``path``) is known to be a Llama and the
    prompt plus ``max_new_tokens`` to fit its context (``max_position_embeddings``: 8,192 for the built-in
    target); ``ValueError`` naming the option otherwise. Reads the config and the tokenizer only, before any
    weights load (a prompt past the context ran on for minutes; a GPT-2 folder ended in a TypeError)."""
    from resispec.engine.model.chat_tokenizer import ChatTokenizer, tokenizer_problem
    from resispec.engine.model.checkpoints import checkpoint_folder, tokenizer_or_none
    from resispec.engine.model.gguf import target_gguf_path

    folder = checkpoint_folder(target_gguf_path() if path is None else path, "target")
    config = json.loads((folder / "config.json").read_text())  # read as JSON: a warm start imports no transformers
    if config.get("model_type") != "llama":
        raise ValueError(f"--target: {path} is a {config.get('model_type')} checkpoint; the engine runs "
                         "Llama-architecture targets (config model_type 'llama', like SmolLM2)")
    tokenizer = ChatTokenizer(folder) if tokenizer_problem(folder) is None else tokenizer_or_none(folder)
    if tokenizer is None:
        return 0  # load_target names the missing tokenizer
    tokens = len(prompt_ids(tokenizer, request.prompt, request.chat))
    context = config.get("max_position_embeddings")
    if context is not None and tokens + request.max_new_tokens > context:
        raise ValueError(f"--prompt: {tokens} tokens plus --max-new-tokens {request.max_new_tokens} pass the target's "
                         f"context of {context} tokens; shorten the prompt or ask for fewer tokens")
    return tokens


def generate(model, tokenizer, request: GenerationRequest, on_text: Callable[[str], None] | None = None,
             log: NodeLog | None = None, prior: Calibration | None = None) -> tuple[list[int], DecodeStats]:
    """Run one generation; ``on_text`` receives the newly decoded text after every token; ``log``
    records every verified node (with it, or with a parity fraction, ``auto`` chooses among trees only: plain
    decoding verifies no node).

    With ``auto`` (and neither), the decoder re-decides the shape as it decodes (`resispec.engine.decode.adaptive`,
    the calibration its prior): ``stats.tree`` then says so (``online``), and ``stats.shapes`` lists the shapes
    and why; a calibration the decoder found far off is refreshed with the costs it measured. ``prior``: a
    calibration to start ``auto`` from instead of the cached one (benchmarks; never stored)."""
    draft = functools.cache(lambda: make_draft(request.draft, model))  # built once, when first needed: a
    # cached choice of plain decoding builds none

    # a node log or a parity check asks for verified nodes: then auto chooses among trees only
    plain = log is None and not request.parity_fraction
    branching, tree_info, calibration = resolve_tree(model, tokenizer, draft, request, plain=plain, prior=prior)
    shapes = None
    if calibration is not None and plain:  # auto: the shape decided as it decodes, the calibration as prior
        key = calibration_key(model, resolve_draft_name(request.draft, model), request.verification.node.name,
                              request.sampling, request.threads)
        shapes = online_shapes(key if prior is None else None, calibration, request.verification.chains_only)
        decoder_draft, verifier, branching = draft(), request.verification, branching or (1,)
        tree_info["online"] = True
    elif request.verifier == AUTOREGRESSIVE or branching == PLAIN:  # plain decoding: sample from p itself
        decoder_draft, verifier, branching = None, AUTOREGRESSIVE, (1,)
    else:
        decoder_draft, verifier = draft(), request.verification or request.verifier
    decoder = Decoder(model, decoder_draft, verifier, branching, request.sampling, request.seed, request.audit,
                      request.parity_fraction, log, shapes)
    tokens: list[int] = []
    shown = ""
    for token in decoder.generate(prompt_ids(tokenizer, request.prompt, request.chat), request.max_new_tokens,
                                  tokenizer.eos_token_id):
        tokens.append(token)
        if on_text:
            text = tokenizer.decode(tokens, skip_special_tokens=True)
            on_text(text[len(shown):])
            shown = text
    decoder.stats.tree = tree_info
    if shapes is not None:
        tree_info.update(shapes=decoder.stats.shapes, shapes_dropped=decoder.stats.shapes_dropped,
                         shape_tokens=decoder.stats.shape_tokens)
        far_off = shapes.far_off()
        if far_off is not None and prior is None:
            refreshed = shapes.refreshed()
            refresh_calibration(key, refreshed, far_off)
            shapes.rebase(refreshed)
            tree_info["calibration_refreshed"] = far_off
    return tokens, decoder.stats


_ONLINE: dict[str, OnlineShapes] = {}
"""The process's online models by configuration (the calibration's cache key and date; a prior given instead: its
content) and chains-only flag: what one generation measured, the next starts from (the probe gap and the estimates carry
over, also past a refresh of the cached calibration)."""


def online_shapes(key: str | None, calibration: Calibration, chains_only: bool) -> OnlineShapes:
    """The online model of this configuration (``key``; None: keyed by ``calibration``'s content) in this process
    (`_ONLINE`), made from ``calibration`` on first use."""
    prior = {"made": calibration.made.get("date")} if key else asdict(calibration)  # a refresh keeps the date
    identity = json.dumps({"key": key, "prior": prior, "chains_only": chains_only}, sort_keys=True, default=str)
    if identity not in _ONLINE:
        _ONLINE[identity] = OnlineShapes(calibration, chains_only)
    return _ONLINE[identity]


def tree_text(branching: tuple[int, ...] | str) -> str:
    """``(4, 2)`` -> ``"4,2"``; ``"auto"`` stays."""
    return branching if isinstance(branching, str) else ",".join(map(str, branching))


def resolve_tree(model, tokenizer, draft: Callable[[], Draft], request: GenerationRequest,
                 plain: bool = True,
                 prior: Calibration | None = None) -> tuple[tuple[int, ...], dict, Calibration | None]:
    """The branching to decode with (with ``plain``, ``PLAIN`` where ``auto`` predicts no tree faster than plain
    decoding), what to report about it (for ``auto``: the prediction, the best tree's beside it, and what the
    calibration is), and the calibration (None unless ``auto``); ``draft()`` builds the draft, called only where
    ``auto`` calibrates; ``prior``: the calibration to use instead of the cached one."""
    if request.verifier == AUTOREGRESSIVE:
        return (1,), {}, None
    if request.branching != AUTO_TREE:
        return tuple(request.branching), {"branching": list(request.branching)}, None
    verification = request.verification  # a sequence-level one: calibrated with its drafting verifier (a lower bound)
    if prior is None:
        tree, calibration, cached = choose_tree(model, tokenizer, draft, resolve_draft_name(request.draft, model),
                                                verification.node.name, request.sampling, request.threads,
                                                verification.chains_only)
    else:
        tree, calibration, cached = prior.choose(chains_only=verification.chains_only), prior, True
    choice = calibration.choose(chains_only=verification.chains_only, plain=True) if plain else tree
    return choice.branching, {"branching": list(choice.branching), "auto": True, "plain": choice.branching == PLAIN,
                              "calibration_cached": cached,
                              "predicted_tokens_per_forward": choice.tokens_per_round,
                              "predicted_tokens_per_second": choice.tokens_per_second,
                              "best_tree": {"branching": list(tree.branching),
                                            "predicted_tokens_per_forward": tree.tokens_per_round,
                                            "predicted_tokens_per_second": tree.tokens_per_second},
                              "acceptance": calibration.acceptance,
                              "calibration": {**calibration.made, "summary": describe(calibration.made)}}, calibration


def node_log_for(model, request: GenerationRequest, keep: int) -> NodeLog:
    """A node log whose metadata names the model, the draft and the sampling settings."""
    return NodeLog(model.config.vocab_size, keep, metadata={
        "model": "SmolLM2-135M-Instruct", "draft_model": request.draft,
        "note": f"resispec generate: verifier {request.verifier}, tree {tree_text(request.branching)}, "
                f"top_k {request.sampling.top_k}, top_p {request.sampling.top_p}",
        **({"temperature": request.sampling.temperature} if request.sampling.temperature > 0 else {}),
    })


def summary(tokenizer, tokens: list[int], stats: DecodeStats, audit: bool) -> dict:
    """The JSON record of one generation."""
    record = {
        "text": tokenizer.decode(tokens, skip_special_tokens=True),
        "tokens": len(tokens),
        "tokens_per_second": stats.tokens_per_second,
        "accepted_per_forward": stats.accepted_per_forward,
        "target_forwards": stats.target_forwards,
        "acceptance_by_depth": stats.acceptance_by_depth,
        "tree": stats.tree,
        "seconds": {"total": stats.seconds, "draft": stats.draft_seconds, "target_forward": stats.target_seconds,
                    "verification": stats.verify_seconds, "bookkeeping": stats.bookkeeping_seconds},
        "parity": {"checked": stats.parity_checked, "mismatches": stats.parity_mismatches},
    }
    if audit:
        result = pit_audit(stats.pit) if len(stats.pit) >= 2 else None
        record["audit"] = None if result is None else {
            "n": result.n, "ks_pvalue": result.ks_pvalue, "chi2_pvalue": result.chi2_pvalue,
            "alpha": result.alpha, "passed": result.passed, "min_detectable_tv": result.min_detectable_tv,
            "verdict": result.verdict.value,  # UNTESTED (not FAIL, never PASS) with too few tokens
        }
    return record
