"""Is this text distributed as the target? A sequence-level exactness audit of any decoder's output.

Each generated sequence ``y_1..y_n`` (after a prompt ``c``) is scored by the target by teacher forcing:
one forward over ``c y_1..y_n`` gives the target's logits at every generated position, processed with the
sampling settings the generator claimed (``resispec.engine.decode.processing.target_probs``: temperature, top-k, top-p).
With ``p_t = process(target logits after c y_<t)`` and independent uniforms ``U_t``, the randomized PIT

    u_t = P_{p_t}(Y < y_t) + U_t p_t(y_t)

(``resispec.audit.randomized_pit``, ``Y < y`` in a vocabulary order fixed by the past) is Uniform(0, 1)
and independent over t and over sequences when ``y_t ~ p_t`` given the past, whatever the p_t are. The
pooled values are tested for uniformity by ``resispec.audit.pit_audit`` (KS + chi-square over equal bins,
Bonferroni), which also reports the smallest TV (of the PIT law from uniform) the run detects with power 0.9.

The order is descending p_t (ties by token id): the mode sits at u = 0 and the tail at u = 1 at every
position, so a bias toward likely tokens (or away from them) piles up at the same end of [0, 1] across
positions instead of cancelling as it does in token-id order, where the likely tokens sit anywhere.

The generator's own probabilities are never used: p is recomputed from the target. A token with
``p_t(y_t) = 0`` (outside the claimed top-k / top-p, or not the argmax at temperature 0) is impossible
under the audited law; one such token fails the audit outright.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import torch

from resispec.audit import DEFAULT_ALPHA, AuditResult, pit_audit, randomized_pit
from resispec.engine.audit.served_logprobs import ServedLogprobs
from resispec.engine.decode.processing import Sampling, target_probs

if TYPE_CHECKING:
    from transformers import PretrainedConfig

AUDIT_STREAM = 2
"""Second word of the PIT uniforms' seed ``(seed, AUDIT_STREAM)``: apart from the decoders' streams
(``Decoder`` draws its sampling uniforms from ``default_rng(seed)``; reusing them as the U_t would
correlate u_t with the token: ``u_t = F(y-) + v p(y)`` for the very v that chose y, not uniform)."""
ORDERS = ("probability", "token-id")
BATCH_TOKENS = 1024
"""Teacher-forcing batches hold at most this many tokens (prompt + generated, padded), bounding the
float32 logits to ``BATCH_TOKENS * V * 4`` bytes (200 MB for V = 49152)."""


@dataclass(frozen=True)
class GeneratedSequence:
    """One generated sequence: the prompt's token ids, the generated ids after it (stop token included
    if emitted) and the sampling settings it claims to follow (None: the audit call's settings)."""

    prompt_ids: tuple[int, ...]
    generated_ids: tuple[int, ...]
    sampling: Sampling | None = None
    logprobs: tuple[float | None, ...] | None = None
    """The engine's served logprob of every generated token, where the stream carries them (``served_logprobs``)."""

    @classmethod
    def of(cls, prompt_ids: Iterable[int] | torch.Tensor, generated_ids: Iterable[int] | torch.Tensor,
           sampling: Sampling | None = None) -> GeneratedSequence:
        """From lists or 1-D tensors of ids."""
        def as_tuple(ids: Sequence[int] | torch.Tensor) -> tuple[int, ...]:
            return tuple(int(i) for i in (ids.tolist() if isinstance(ids, torch.Tensor) else ids))

        return cls(as_tuple(prompt_ids), as_tuple(generated_ids), sampling)


@dataclass(frozen=True)
class StreamPit:
    """Randomized-PIT values of every generated token, pooled in sequence order, and how many tokens had
    target probability 0 under the audited law."""

    values: np.ndarray
    impossible: int
    sequences: int
    served: ServedLogprobs = field(default_factory=ServedLogprobs)


def cut_after(generated: Sequence[int], eos_id: int | None) -> list[int]:
    """The ids up to and including the first ``eos_id`` (what follows is padding, not generated text)."""
    generated = list(generated)
    return generated[: generated.index(eos_id) + 1] if eos_id in generated else generated


def check_sequences(sequences: Iterable[GeneratedSequence | tuple], sampling: Sampling,
                    config: PretrainedConfig, eos_id: int | None = None) -> list[GeneratedSequence]:
    """The sequences with a sampling each, cut after ``eos_id`` and validated against the target's ``config``
    (``model.config``, or `resispec.engine.model.models.target_config` before any weights load) before any scoring: a
    non-empty prompt, ids in ``[0, vocab_size)``, and prompt + generated ids within the model's context
    (``config.max_position_embeddings``); a ``ValueError`` names the sequence's index."""
    return _checked(sequences, sampling, config.vocab_size, eos_id, getattr(config, "max_position_embeddings", None))


def _checked(sequences: Iterable[GeneratedSequence | tuple], sampling: Sampling, vocab_size: int,
             eos_id: int | None = None, max_positions: int | None = None) -> list[GeneratedSequence]:
    """The sequences with a sampling each, cut after ``eos_id`` and validated (non-empty prompt, ids in
    [0, vocab_size), at most ``max_positions`` ids in all)."""
    checked = []
    for index, item in enumerate(sequences):
        sequence = item if isinstance(item, GeneratedSequence) else GeneratedSequence.of(*item)
        if eos_id is not None:
            generated = tuple(cut_after(sequence.generated_ids, eos_id))
            sequence = replace(sequence, generated_ids=generated, logprobs=None if sequence.logprobs is None else
                               sequence.logprobs[:len(generated)])
        if not sequence.prompt_ids:
            raise ValueError(f"sequences: sequence {index} has an empty prompt (the first token needs a context)")
        ids = sequence.prompt_ids + sequence.generated_ids
        if min(ids) < 0 or max(ids) >= vocab_size:
            raise ValueError(f"sequences: sequence {index} has a token id outside [0, {vocab_size}) "
                             f"(min {min(ids)}, max {max(ids)}): not the target's vocabulary")
        if max_positions is not None and len(ids) > max_positions:
            raise ValueError(f"sequences: sequence {index} has {len(ids)} positions (prompt + generated), past the "
                             f"target's context of {max_positions}")
        checked.append(sequence if sequence.sampling is not None else replace(sequence, sampling=sampling))
    return checked


def _batches(sequences: Sequence[GeneratedSequence], max_tokens: int) -> Iterable[list[GeneratedSequence]]:
    """Consecutive groups whose padded size (count x longest) stays within ``max_tokens`` (one at least)."""
    batch: list[GeneratedSequence] = []
    for sequence in sequences:
        longest = max([len(s.prompt_ids) + len(s.generated_ids) for s in batch + [sequence]])
        if batch and longest * (len(batch) + 1) > max_tokens:
            yield batch
            batch = []
        batch.append(sequence)
    if batch:
        yield batch


@torch.no_grad()
def _teacher_forced_logits(model: torch.nn.Module, batch: list[GeneratedSequence]) -> list[torch.Tensor]:
    """Target logits (float [n_i, V]) at each generated position of each sequence, one right-padded
    forward for the batch: row t of sequence i is the logits after ``prompt + generated[:t]``."""
    lengths = [len(s.prompt_ids) + len(s.generated_ids) for s in batch]
    input_ids = torch.zeros(len(batch), max(lengths), dtype=torch.long)
    attention_mask = torch.zeros_like(input_ids)
    for row, (sequence, length) in enumerate(zip(batch, lengths)):
        input_ids[row, :length] = torch.tensor(sequence.prompt_ids + sequence.generated_ids)
        attention_mask[row, :length] = 1
    logits = model(input_ids=input_ids.to(model.device), attention_mask=attention_mask.to(model.device)).logits
    return [logits[row, len(s.prompt_ids) - 1: length - 1] for row, (s, length) in enumerate(zip(batch, lengths))]


def _reorder(probs: torch.Tensor, tokens: torch.Tensor, order: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows of ``probs`` [n, V] in the audit's token order and each token's position in its row."""
    if order == "token-id":
        return probs, tokens
    ordered, ids = torch.sort(probs, dim=-1, descending=True, stable=True)
    return ordered, (ids == tokens[:, None]).int().argmax(dim=-1)


def stream_pit(model: torch.nn.Module, sequences: Iterable[GeneratedSequence | tuple],
               sampling: Sampling = Sampling(), seed: int = 0, max_batch_tokens: int = BATCH_TOKENS,
               progress: Callable[[int], None] | None = None, order: str = "probability") -> StreamPit:
    """Randomized-PIT values of every generated token against the target ``model``'s processed p.

    Args:
        model: the target (a transformers causal LM); p is recomputed from it, by teacher forcing.
        sequences: ``GeneratedSequence``s or ``(prompt_ids, generated_ids)`` pairs.
        sampling: the law to audit for sequences that carry no settings of their own.
        seed: the PIT uniforms ``U_t`` come from ``numpy.random.default_rng((seed, AUDIT_STREAM))``.
        max_batch_tokens: padded tokens per teacher-forcing forward.
        progress: called with the number of sequences scored after each batch.
        order: the vocabulary order of the PIT: ``"probability"`` (descending p_t, ties by id; default)
            or ``"token-id"``. See the module doc.
    """
    if order not in ORDERS:
        raise ValueError(f"order: expected one of {ORDERS}, got {order!r}")
    checked = check_sequences(sequences, sampling, model.config)
    if not any(s.generated_ids for s in checked):
        raise ValueError("sequences: no generated tokens to audit")
    rng = np.random.default_rng((seed, AUDIT_STREAM))
    values: list[float] = []
    impossible = 0
    served = ServedLogprobs()
    scored = 0
    for batch in _batches(checked, max_batch_tokens):
        for sequence, logits in zip(batch, _teacher_forced_logits(model, batch)):
            scored += 1
            if not sequence.generated_ids:
                continue
            probs = target_probs(logits, sequence.sampling)
            tokens = torch.tensor(sequence.generated_ids, device=probs.device)
            if sequence.logprobs is not None:
                raw = torch.log_softmax(logits.double(), dim=-1).gather(1, tokens[:, None])[:, 0]
                served.add(sequence.logprobs, raw.cpu().numpy(), probs.gather(1, tokens[:, None])[:, 0].log().cpu()
                           .numpy(), f"sequence {scored - 1}")
            impossible += int((probs.gather(1, tokens[:, None]) == 0).sum())
            ordered, positions = _reorder(probs, tokens, order)
            for p, position in zip(ordered.cpu().numpy(), positions.tolist()):
                values.append(randomized_pit(p, position, float(rng.random())))
        if progress:
            progress(len(batch))
    return StreamPit(np.asarray(values), impossible, len(checked), served)


def law_description(sampling: Sampling) -> str:
    """The audited law in words, e.g. ``target p at T = 1, top-k 50``."""
    parts = ["greedy (argmax of the target)" if sampling.greedy else f"target p at T = {sampling.temperature:g}"]
    if sampling.top_k is not None:
        parts.append(f"top-k {sampling.top_k}")
    if sampling.top_p is not None:
        parts.append(f"top-p {sampling.top_p:g}")
    return ", ".join(parts)


def audit_pit(pit: StreamPit, law: str, alpha: float = DEFAULT_ALPHA) -> AuditResult:
    """``pit_audit`` of the pooled values; failed outright (p-value 0) if any token was impossible, else
    ``Verdict.UNTESTED`` (never a pass) where the tokens are too few to have any power."""
    result = pit_audit(pit.values, alpha)
    note = (f"law audited: {law} (recomputed from the target by teacher forcing; the generator's own "
            f"probabilities are not used); {pit.sequences} sequences, {pit.values.size} tokens, "
            f"{pit.impossible} impossible under this law")
    if pit.impossible:  # one impossible token is a rejection, however few the tokens
        return replace(result, passed=False, pvalue=0.0, tested=True, note=note)
    if pit.served.problem:  # the served logprobs are wrong: nothing this stream serves is certified
        return replace(result, passed=False, tested=False, note=f"{pit.served.problem}; {note}")
    return replace(result, note="; ".join(filter(None, [note, result.note])))


def audit_sequences(model: torch.nn.Module, sequences: Iterable[GeneratedSequence | tuple],
                    sampling: Sampling = Sampling(), seed: int = 0, alpha: float = DEFAULT_ALPHA,
                    eos_id: int | None = None) -> AuditResult:
    """Is the generated text distributed as the target ``model`` processed by ``sampling``?

    ``sequences``: ``(prompt_ids, generated_ids)`` pairs (lists or 1-D tensors) or ``GeneratedSequence``s;
    with ``eos_id``, each is cut after its first ``eos_id`` (what follows is padding, e.g. the rows of a
    batched ``generate``). Returns the ``AuditResult`` of ``pit_audit`` on the pooled randomized-PIT
    values (see the module doc).
    """
    checked = check_sequences(sequences, sampling, model.config, eos_id)
    law = "; ".join(sorted({law_description(s.sampling) for s in checked}))
    return audit_pit(stream_pit(model, checked, sampling, seed), law, alpha)
