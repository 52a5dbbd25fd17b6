"""Decoders whose output the stream audit checks (``resispec.engine.audit.stream_audit``), by name.

- ``engine:VERIFIER``: this engine (``resispec.engine.decode.decoding.Decoder``) with any verifier of the zoo (or
``ar``),
  its draft and tree;
- ``hf``: transformers ``generate`` (``do_sample=True``; greedy at temperature 0);
- ``hf-assisted``: transformers assisted generation, the engine's draft (``make_draft(...).model``) as
  ``assistant_model`` (speculative sampling, Leviathan et al. 2023, Algorithm 1);
- ``hf-ensemble:W``: the same with ``assistant_ensemble_weight=W``, which verifies against
  ``W p + (1 - W) q`` instead of p (lossy by design, for 0 < W < 1);
- ``jsonl:FILE``: sequences produced anywhere, one JSON object a line (``read_jsonl``).

Sequence j continues prompt ``j mod len(prompts)``; every generator stops a sequence after the
end-of-sequence id ``eos_id`` or ``max_new_tokens``. All randomness flows from ``seed``: the engine's
``Decoder(seed=...)`` or, for transformers (which draws from torch's global generator), ``torch.manual_seed``
inside ``torch.random.fork_rng`` so the caller's global state is left as it was.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from resispec.engine.audit.stream_audit import GeneratedSequence, cut_after
from resispec.engine.decode.decoding import Decoder
from resispec.engine.decode.processing import Sampling
from resispec.engine.drafts.registry import DEFAULT_DRAFT, make_draft
from resispec.engine.runtime.tree_lm import TreeLM

GENERATOR_FORMS = ("engine:VERIFIER", "hf", "hf-assisted", "hf-ensemble:W", "jsonl:FILE")
HF_BATCH = 8
"""Sequences of one prompt generated together by plain ``hf`` (``num_return_sequences``)."""


@dataclass(frozen=True)
class GeneratorSpec:
    """A parsed generator name: ``kind`` in engine / hf / hf-assisted / hf-ensemble / jsonl, and its
    argument (verifier, weight or file; empty for hf and hf-assisted)."""

    kind: str
    argument: str = ""

    @property
    def ensemble_weight(self) -> float | None:
        return float(self.argument) if self.kind == "hf-ensemble" else None


def parse_generator(text: str) -> GeneratorSpec:
    """``"engine:resispec"`` -> GeneratorSpec("engine", "resispec"); ValueError naming ``generator``."""
    kind, _, argument = text.partition(":")
    if kind in ("hf", "hf-assisted") and not argument:
        return GeneratorSpec(kind)
    if kind in ("engine", "jsonl") and argument:
        return GeneratorSpec(kind, argument)
    if kind == "hf-ensemble" and argument:
        try:
            weight = float(argument)
        except ValueError:
            weight = float("nan")
        if not 0 < weight < 1:
            raise ValueError(f"generator: hf-ensemble:W needs a weight 0 < W < 1, got {argument!r}")
        return GeneratorSpec(kind, argument)
    raise ValueError(f"generator: unknown generator {text!r}; known forms: {', '.join(GENERATOR_FORMS)}")


JSONL_SAMPLING_KEYS = ("temperature", "top_k", "top_p")


def read_jsonl(path: str | Path, sampling: Sampling = Sampling()) -> list[GeneratedSequence]:
    """Sequences from a JSON-lines file (UTF-8): one object a line with ``prompt_ids`` (a non-empty list)
    and ``generated_ids`` (lists of non-negative integer token ids, booleans refused, the generated ones
    cut after the stop token) and optionally ``temperature``, ``top_k``, ``top_p`` (checked as
    ``Sampling`` checks them; absent ones take ``sampling``'s). Blank lines are skipped. Every record is
    checked here, before any model loads: a ``ValueError`` names the file, the line and what is wrong
    (the vocabulary and the context are checked against the target by ``check_sequences``)."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise ValueError(f"generator: cannot read jsonl file {path}: {error.strerror}") from None
    sequences = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"generator: {path} line {number}: not UTF-8 text (byte {error.start})") from None
        if line.strip():
            sequences.append(_jsonl_record(line, sampling, f"{path} line {number}"))
    if not sequences:
        raise ValueError(f"generator: {path} holds no sequences")
    return sequences


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _jsonl_record(line: str, sampling: Sampling, where: str) -> GeneratedSequence:
    """One checked ``read_jsonl`` record (``where``: file and line, for the error)."""
    try:
        record = json.loads(line, parse_constant=_refuse_constant)
    except ValueError as error:
        raise ValueError(f"generator: {where}: not a JSON object ({error})") from None
    if not isinstance(record, dict):
        raise ValueError(f"generator: {where}: expected an object with prompt_ids and generated_ids, "
                         f"got {type(record).__name__}")
    ids = []
    for key in ("prompt_ids", "generated_ids"):
        value = record.get(key)
        if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0
                                                  for i in value):
            raise ValueError(f"generator: {where}: {key} must be a list of token ids (non-negative integers), "
                             f"got {json.dumps(value)[:60]}")
        ids.append(value)
    if not ids[0]:
        raise ValueError(f"generator: {where}: prompt_ids is empty (the first token needs a context)")
    try:
        settings = Sampling(*(record.get(key, getattr(sampling, key)) for key in JSONL_SAMPLING_KEYS))
    except ValueError as error:
        raise ValueError(f"generator: {where}: {error}") from None
    return replace(GeneratedSequence.of(*ids, settings), logprobs=_served_logprobs(record, len(ids[1]), where))


def _served_logprobs(record: dict, count: int, where: str) -> tuple[float | None, ...] | None:
    """The record's served logprob per generated token, or None where it carries none: ``logprobs`` as numbers
    (or null), or as objects with a ``logprob`` (OpenAI / vLLM), or llama.cpp server's ``completion_probabilities``
    (objects with a ``logprob``); one per generated id."""
    key = next((name for name in ("logprobs", "completion_probabilities") if name in record), None)
    if key is None:
        return None
    value = record[key]
    if isinstance(value, dict) and isinstance(value.get("content"), list):  # OpenAI chat: {"content": [...]}
        value = value["content"]
    if not isinstance(value, list) or len(value) != count:
        raise ValueError(f"generator: {where}: {key} must be a list with one entry per generated id ({count}), got "
                         f"{json.dumps(value)[:60]}")
    served = []
    for entry in value:
        number = entry.get("logprob") if isinstance(entry, dict) else entry
        if number is not None and (isinstance(number, bool) or not isinstance(number, (int, float))):
            raise ValueError(f"generator: {where}: {key} entries must be numbers, null or objects with a "
                             f"logprob, got {json.dumps(entry)[:60]}")
        served.append(None if number is None else float(number))
    return tuple(served)


def _draft(draft: str | TreeLM, model) -> TreeLM:
    """The draft ``draft`` names (``make_draft``), or ``draft`` itself."""
    return make_draft(draft, model) if isinstance(draft, str) else draft


def _hf_settings(sampling: Sampling) -> dict:
    """``generate`` kwargs for ``sampling``; top-k 0 / top-p 1 switch off transformers' defaults (top-k 50)."""
    if sampling.greedy:
        return {"do_sample": False}
    return {"do_sample": True, "temperature": sampling.temperature, "top_k": sampling.top_k or 0,
            "top_p": sampling.top_p or 1.0}


ASSISTANT_NOTICE = "Passing `generation_config` together with generation-related"
"""The start of the deprecation warning transformers' assisted generation logs about its own call of the assistant's
``generate`` (``generation_config`` and keyword arguments together): nothing a caller can change, so
``quiet_assistant_notice`` drops it (issue 46: it leaked into ``resispec audit-stream``)."""


def _not_the_assistant_notice(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith(ASSISTANT_NOTICE)


@contextmanager
def quiet_assistant_notice() -> Iterator[None]:
    """Drop ``ASSISTANT_NOTICE`` from transformers' generation logger while the block runs; every other line
    still shows."""
    logger = logging.getLogger("transformers.generation.utils")
    logger.addFilter(_not_the_assistant_notice)
    try:
        yield
    finally:
        logger.removeFilter(_not_the_assistant_notice)


def _hf_sequences(spec: GeneratorSpec, model, prompts: Sequence[torch.Tensor], counts: list[int],
                  max_new_tokens: int, sampling: Sampling, seed: int, draft: str | TreeLM, eos: int | None
                  ) -> Iterator[GeneratedSequence]:
    """``counts[i]`` sequences of prompt i from transformers ``generate`` (plain, assisted or ensemble)."""
    kwargs = {**_hf_settings(sampling), "max_new_tokens": max_new_tokens, "eos_token_id": eos,
              "pad_token_id": 0 if eos is None else eos}
    batch = HF_BATCH
    if spec.kind != "hf":  # assisted generation runs one sequence at a time
        kwargs["assistant_model"] = _draft(draft, model).model
        kwargs["assistant_ensemble_weight"] = spec.ensemble_weight
        batch = 1
    with torch.random.fork_rng(devices=[]), quiet_assistant_notice():
        torch.manual_seed(seed)
        for prompt, count in zip(prompts, counts):
            ids = prompt[None].to(model.device)
            for start in range(0, count, batch):
                size = min(batch, count - start)
                with torch.no_grad():
                    out = model.generate(ids, attention_mask=torch.ones_like(ids), num_return_sequences=size,
                                         **kwargs)
                for row in out[:, ids.shape[1]:].tolist():
                    yield GeneratedSequence.of(prompt, cut_after(row, eos), sampling)


def generate_sequences(generator: str | GeneratorSpec, model, prompts: Sequence[torch.Tensor], count: int,
                       max_new_tokens: int, sampling: Sampling = Sampling(), seed: int = 0,
                       draft: str | TreeLM = DEFAULT_DRAFT, branching: tuple[int, ...] = (4, 2, 2, 1),
                       eos_id: int | None = None) -> Iterator[GeneratedSequence]:
    """``count`` sequences from ``generator`` (a name or a ``GeneratorSpec``) with the target ``model``,
    continuing ``prompts`` (token ids, long [T]) in turn and stopping after ``eos_id``.

    ``draft``: a draft name (``make_draft``) or a ``TreeLM`` (its ``.model`` is the assistant of
    ``hf-assisted``); ``branching``: the engine's tree. ``jsonl:FILE`` ignores the other arguments and
    yields the file's sequences.
    """
    spec = parse_generator(generator) if isinstance(generator, str) else generator
    if spec.kind == "jsonl":
        yield from read_jsonl(spec.argument, sampling)
        return
    if count < 1 or max_new_tokens < 1 or not prompts:
        raise ValueError(f"count, max_new_tokens: need >= 1 each and at least one prompt "
                         f"(got {count}, {max_new_tokens}, {len(prompts)} prompts)")
    if spec.kind == "engine":
        drafter = None if spec.argument == "ar" else _draft(draft, model)
        decoder = Decoder(model, drafter, spec.argument, branching, sampling, seed)
        for j in range(count):
            prompt = prompts[j % len(prompts)]
            yield GeneratedSequence.of(prompt, list(decoder.generate(prompt, max_new_tokens, eos_id)),
                                       sampling)
        return
    counts = [len(range(i, count, len(prompts))) for i in range(len(prompts))]
    yield from _hf_sequences(spec, model, prompts, counts, max_new_tokens, sampling, seed, draft, eos_id)
