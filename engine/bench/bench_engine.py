"""``resispec bench engine``: the engine against plain decoding and against transformers' assisted generation.

Configurations, all in one run over the held-out prompts (`resispec.engine.data.prompts.load_bench_prompts`, never
used for training or tuning; a test keeps them apart from the training prompts):

- ``ar``: the engine's plain autoregressive sampling from the target (the baseline);
- the engine with each verifier (default: every exact one) and the tree (default ``auto``: ``plain``, i.e.
  plain decoding, where no tree is predicted faster);
- both of the above for each way of computing the target given (``float32``, ``native``:
  `resispec.engine.model.native`), rows then named ``ar [native]`` and so on, each speedup over its own ``ar``;
- ``hf``: transformers ``generate(do_sample=True)`` on the same target (the first one given);
- ``hf-assisted:N``: transformers assisted generation with the same target and the same draft model as
  ``assistant_model`` (``do_sample=True``, ``num_assistant_tokens=N``, constant schedule and the
  assistant's confidence threshold off, so that every round drafts N tokens), for each N given; the
  best of them is *the peer*; skipped for a draft no transformers model computes (``ngram``,
  ``layer-skip``: `resispec.engine.drafts.registry.assistant_model`);
- ``llama.cpp`` and ``llama.cpp-lookup``: llama.cpp on the target's own GGUF file with the same threads,
  prompt token ids, untruncated sampling and seeds, plain and with its prompt-lookup draft
  (`resispec.engine.bench.llama_peer`; optional, skipped with one line where ``llama_cpp`` is not installed).

With ``tree_from`` and the tree ``auto``, the tree is chosen once per target computation by that verifier's
calibration (`resispec.engine.decode.calibration.choose_tree`) and every verifier decodes on it: the verifiers compared
at equal draft and tree; a verifier that cannot take it (sps, block on a branching tree) is left out.

For each prompt every configuration runs in turn, so background load spreads evenly over them; the order is
rotated by one configuration per prompt (no configuration always runs first, or right after another), and every
configuration decodes ``WARM_UP_TOKENS`` tokens of the first prompt once before the timed runs (the process's first
forwards, kernel packing and caches are nobody's). Per configuration: tokens, target forwards, tokens per target
forward, tokens/s with the prompt's prefill and without it (decode only; engine rows), the spread of tokens/s over
the prompts, speedup over ``ar``, and where the time goes (draft forwards, target forwards, verification, the rest).
A configuration that decoded every prompt plainly ran the same computation as ``ar``: its row says so
(``same_as``), and `pooled_plain` pools them. For transformers the split comes from forward hooks on the two
models. Sampling is T-scaled softmax with nothing else on both sides (transformers' top-k/top-p defaults switched
off).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import torch
from transformers import PreTrainedModel

from resispec.engine.bench.llama_peer import LlamaPeer
from resispec.engine.decode.calibration import choose_tree
from resispec.engine.decode.decoding import AUTOREGRESSIVE
from resispec.engine.decode.generation import AUTO_TREE, GenerationRequest, generate, prompt_ids
from resispec.engine.decode.processing import Sampling
from resispec.engine.drafts.registry import assistant_model, make_draft, resolve_draft_name
from resispec.engine.verifiers.strategy import Verification
from resispec.progress import Progress

HF = "hf"
HF_ASSISTED = "hf-assisted"
WARM_UP_TOKENS = 8


@dataclass
class EngineRow:
    """Totals of one configuration over the prompts (seconds of wall time)."""

    name: str
    tokens: int = 0
    target_forwards: int = 0
    seconds: float = 0.0
    draft_seconds: float = 0.0
    target_seconds: float = 0.0
    verify_seconds: float = 0.0
    speedup: float | None = None
    tree: str = ""
    prefill_seconds: float | None = None
    """The prompts' prefill (engine rows; None where not measured)."""
    per_prompt: list[float] = field(default_factory=list)
    """Tokens per second on each prompt."""
    same_as: str | None = None
    """The row that ran the same computation (``ar`` of its target, for a configuration that decoded plainly)."""

    @property
    def tokens_per_second(self) -> float | None:
        return self.tokens / self.seconds if self.seconds else None

    @property
    def decode_tokens_per_second(self) -> float | None:
        """Tokens per second without the prompts' prefill (None where it was not measured)."""
        if self.prefill_seconds is None or self.seconds <= self.prefill_seconds:
            return None
        return self.tokens / (self.seconds - self.prefill_seconds)

    @property
    def spread(self) -> tuple[float, float] | None:
        """The lowest and highest tokens per second over the prompts."""
        return (min(self.per_prompt), max(self.per_prompt)) if self.per_prompt else None

    @property
    def accepted_per_forward(self) -> float | None:
        return self.tokens / self.target_forwards if self.target_forwards else None

    @property
    def other_seconds(self) -> float:
        return self.seconds - self.draft_seconds - self.target_seconds - self.verify_seconds

    def to_dict(self) -> dict:
        return {**asdict(self), "tokens_per_second": self.tokens_per_second,
                "decode_tokens_per_second": self.decode_tokens_per_second, "spread": self.spread,
                "accepted_per_forward": self.accepted_per_forward, "other_seconds": self.other_seconds}


class ForwardTimer:
    """Counts a module's forward calls and their wall time (forward pre/post hooks)."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.calls, self.seconds, self._start = 0, 0.0, 0.0
        self._handles = [module.register_forward_pre_hook(self._before), module.register_forward_hook(self._after)]

    def _before(self, *_) -> None:
        self._start = time.perf_counter()

    def _after(self, *_) -> None:
        self.calls += 1
        self.seconds += time.perf_counter() - self._start

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()


def hf_generate(model, tokenizer, prompt: str, max_new_tokens: int, sampling: Sampling, seed: int,
                assistant=None, assistant_tokens: int = 0) -> EngineRow:
    """One transformers generation (plain, or assisted by ``assistant``), timed, with its forward split."""
    ids = prompt_ids(tokenizer, prompt, chat=True)[None].to(model.device)
    timers = [ForwardTimer(model)] + ([ForwardTimer(assistant)] if assistant is not None else [])
    options = dict(do_sample=True, temperature=sampling.temperature, top_k=None, top_p=None,
                   max_new_tokens=max_new_tokens, pad_token_id=tokenizer.eos_token_id)
    if assistant is not None:
        options.update(assistant_model=assistant)
        # transformers 5.24 reads these from the assistant's own generation config, not from generate's kwargs
        assistant.generation_config.update(num_assistant_tokens=assistant_tokens,
                                           num_assistant_tokens_schedule="constant",
                                           assistant_confidence_threshold=0.0)
    torch.manual_seed(seed)
    try:
        start = time.perf_counter()
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), **options)
        seconds = time.perf_counter() - start
    finally:
        for timer in timers:
            timer.remove()
    return EngineRow("", tokens=out.shape[1] - ids.shape[1], target_forwards=timers[0].calls, seconds=seconds,
                     target_seconds=timers[0].seconds,
                     draft_seconds=timers[1].seconds if assistant is not None else 0.0)


def engine_row_name(verifier: str, compute: str, computes: Sequence[str]) -> str:
    """``verifier``, or ``verifier [compute]`` when several target computations share the table."""
    return verifier if len(computes) == 1 else f"{verifier} [{compute}]"


def shared_tree(model: PreTrainedModel, tokenizer, draft: str, verifier: str, sampling: Sampling,
                threads: int) -> tuple[int, ...]:
    """The ``auto`` tree of ``verifier`` with ``draft`` on ``model`` (calibrated once, cached), for every verifier."""
    choice, _, _ = choose_tree(model, tokenizer, lambda: make_draft(draft, model), resolve_draft_name(draft, model),
                               verifier, sampling, threads)
    return choice.branching


def takes_tree(verifier: str, branching: tuple[int, ...] | str) -> bool:
    """Whether ``verifier`` decodes on ``branching`` (``ar`` and ``auto``: always)."""
    if verifier == AUTOREGRESSIVE or branching == AUTO_TREE:
        return True
    try:
        Verification.of(verifier).check_branching(tuple(branching))
    except ValueError:
        return False
    return True


def bench_engine(targets: Mapping[str, PreTrainedModel], tokenizer, verifiers: Sequence[str], draft: str,
                 branching: tuple[int, ...] | str, max_new_tokens: int, sampling: Sampling, seed: int,
                 prompts: Sequence[str], assistant_tokens: Sequence[int] = (), threads: int = 1,
                 progress: bool = False, tree_from: str | None = None,
                 llama_peers: Mapping[str, LlamaPeer] | None = None) -> list[EngineRow]:
    """One row per configuration (``ar`` first for each target), summed over ``prompts`` (module docstring).
    ``targets``: the target computed each way to compare, by name (``{"float32": model}``, or with
    ``"native"``); transformers runs on the first. ``tree_from``: the verifier whose ``auto`` tree all share.
    ``llama_peers``: llama.cpp configurations by row name."""
    llama_peers = llama_peers or {}
    computes = list(targets)
    model = targets[computes[0]]
    trees = {compute: shared_tree(targets[compute], tokenizer, draft, tree_from, sampling, threads)
             if tree_from and branching == AUTO_TREE else branching for compute in computes}
    names = {compute: [name for name in [AUTOREGRESSIVE, *[v for v in verifiers if v != AUTOREGRESSIVE]]
                       if takes_tree(name, trees[compute])] for compute in computes}
    assistant = assistant_model(make_draft(draft, model)) if assistant_tokens else None
    peers = ([HF] + ([f"{HF_ASSISTED}:{n}" for n in assistant_tokens] if assistant is not None else [])
             if assistant_tokens else [])
    rows = {engine_row_name(name, compute, computes): EngineRow(engine_row_name(name, compute, computes))
            for compute in computes for name in names[compute]}
    rows.update({name: EngineRow(name) for name in [*peers, *llama_peers]})
    runs = [(compute, name) for compute in computes for name in names[compute]]
    runs.sort(key=lambda run: names[run[0]].index(run[1]))  # verifier by verifier, each target in turn

    def engine_run(compute: str, name: str) -> Callable[[str, int, int], EngineRow]:
        def run(prompt: str, index: int, new_tokens: int) -> EngineRow:
            request = GenerationRequest(prompt=prompt, verifier=name, draft=draft, branching=trees[compute],
                                        sampling=sampling, max_new_tokens=new_tokens, seed=seed + index,
                                        threads=threads)
            tokens, stats = generate(targets[compute], tokenizer, request)
            label = engine_row_name(name, compute, computes)
            return EngineRow(label, len(tokens), stats.target_forwards, stats.seconds, stats.draft_seconds,
                             stats.target_seconds, stats.verify_seconds, tree=tree_label(stats.tree),
                             prefill_seconds=stats.prefill_seconds)
        return run

    def hf_run(name: str) -> Callable[[str, int, int], EngineRow]:
        count = int(name.split(":")[1]) if ":" in name else 0
        return lambda prompt, index, new_tokens: hf_generate(model, tokenizer, prompt, new_tokens, sampling,
                                                             seed + index, assistant if count else None, count)

    def llama_run(name: str, peer: LlamaPeer) -> Callable[[str, int, int], EngineRow]:
        def run(prompt: str, index: int, new_tokens: int) -> EngineRow:
            tokens, split = peer.generate(prompt_ids(tokenizer, prompt, chat=True).tolist(), new_tokens,
                                          sampling.temperature, seed + index, tokenizer.eos_token_id)
            return EngineRow(name, len(tokens), split["target_forwards"], split["seconds"], split["draft_seconds"],
                             split["target_seconds"])
        return run

    jobs = ([(engine_row_name(name, compute, computes), engine_run(compute, name)) for compute, name in runs]
            + [(name, hf_run(name)) for name in peers]
            + [(name, llama_run(name, peer)) for name, peer in llama_peers.items()])
    bar = Progress(total=len(prompts) * len(rows) + len(jobs), desc="bench engine", unit="run",
                   disable=None if progress else True)
    for label, job in jobs:  # warm-up, untimed: every configuration's first forwards
        job(prompts[0], 0, min(WARM_UP_TOKENS, max_new_tokens))
        bar.set_postfix_str(f"warm-up: {label}")
        bar.update()
    for index, prompt in enumerate(prompts):
        shift = index % len(jobs)
        for label, job in jobs[shift:] + jobs[:shift]:  # rotated: no configuration always first
            part = job(prompt, index, max_new_tokens)
            _add(rows[label], part)
            _report(bar, label, part.tokens, part.seconds, part.target_forwards)
    bar.close()
    for compute in computes:
        plain = engine_row_name(AUTOREGRESSIVE, compute, computes)
        baseline = rows[plain].tokens_per_second
        own = [engine_row_name(name, compute, computes) for name in names[compute]] + (
            [*peers, *llama_peers] if compute == computes[0] else [])
        for label in own:
            row = rows[label]
            row.speedup = row.tokens_per_second / baseline if baseline and row.tokens_per_second else None
            if label != plain and label in rows and row.tree == "plain":
                row.same_as = plain
    return list(rows.values())


def tree_label(tree: dict) -> str:
    """How a generation decoded: ``plain``, a branching (``1,1``), or with the online model the shapes it used
    (``plain+1,1``)."""
    if tree.get("online"):
        return "+".join(tree.get("shape_tokens", {})) or "plain"
    return "plain" if tree.get("plain") or not tree.get("branching") else ",".join(map(str, tree["branching"]))


def pooled_plain(rows: Sequence[EngineRow], plain: str) -> EngineRow | None:
    """The ``plain`` row (``ar`` of one target) pooled with every row that ran its computation (``same_as``);
    None when no row did."""
    same = [row for row in rows if row.same_as == plain]
    if not same:
        return None
    pooled = EngineRow(f"{plain} + {len(same)} plain row(s), pooled", tree="plain", prefill_seconds=0.0)
    members = [*(row for row in rows if row.name == plain), *same]
    for row in members:
        _add(pooled, row)
    pooled.per_prompt = [rate for row in members for rate in row.per_prompt]
    return pooled


def best_peer(rows: Sequence[EngineRow]) -> EngineRow | None:
    """The fastest transformers assisted-generation row (the peer)."""
    assisted = [row for row in rows if row.name.startswith(HF_ASSISTED) and row.tokens_per_second]
    return max(assisted, key=lambda row: row.tokens_per_second, default=None)


def _add(total: EngineRow, part: EngineRow) -> None:
    for name in ("tokens", "target_forwards", "seconds", "draft_seconds", "target_seconds", "verify_seconds"):
        setattr(total, name, getattr(total, name) + getattr(part, name))
    if part.prefill_seconds is not None and (total.prefill_seconds is not None or not total.per_prompt):
        total.prefill_seconds = (total.prefill_seconds or 0.0) + part.prefill_seconds
    else:
        total.prefill_seconds = None
    if part.seconds:
        total.per_prompt.append(part.tokens / part.seconds)
    total.tree = part.tree if total.tree in ("", part.tree) else "varies"


def _report(bar: Progress, name: str, tokens: int, seconds: float, forwards: int) -> None:
    bar.set_postfix_str(f"{name}: {tokens / seconds:.1f} tokens/s, {tokens / max(forwards, 1):.2f} tokens/forward")
    bar.update()
