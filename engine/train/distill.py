"""Distilling the draft from the target: loss, held-out overlap, and a seeded, resumable training loop.

Loss at a position with target distribution p and draft distribution q (both full, T = 1):

    KL(p || q) = sum_x p(x) (log p(x) - log q(x)),   gradient wrt q's logits: q - p.

p is recomputed exactly as ``softmax(lm_head(h))`` (float32) from the stored target state h
(`resispec.engine.train.draft_data`); only the draft's own layers and norm learn (embedding and head frozen, shared).
The figure of merit is the overlap ``sum_x min(p(x), q(x)) = 1 - TV(p, q)``: the acceptance probability
of one draft token under speculative sampling.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from transformers import PreTrainedModel

from resispec.engine.drafts.trained import DraftLayers
from resispec.engine.train.draft_data import Sequences
from resispec.formats.atomic import atomic_path

CURVE_FIELDS = ("step", "train_tokens", "heldout_overlap", "heldout_kl", "train_kl", "train_overlap", "elapsed_s")


@dataclass(frozen=True, kw_only=True)
class Schedule:
    """A training run's schedule, shared by the drafts' trainings (`learning_rate`, `step_sequences`).

    Attributes:
        steps: optimizer steps; sequences_per_step: whole target-generated sequences per step.
        lr: peak AdamW learning rate, reached after `warmup_steps` (linear), then cosine decay to
            ``min_lr_ratio * lr`` at `steps`.
        eval_every: steps between held-out evaluations (also at step 0 and at the end).
        seed: seeds the order of sequences (a fresh permutation each epoch).
    """

    steps: int
    sequences_per_step: int
    lr: float
    warmup_steps: int
    eval_every: int
    seed: int
    min_lr_ratio: float = 0.1


@dataclass(frozen=True, kw_only=True)
class TrainConfig(Schedule):
    """Distillation settings: the `Schedule`, and

    Attributes:
        init_from: target layers copied into the draft's own layers, in order (their count is the depth).
        bf16: run the draft's forward and backward under bfloat16 autocast (the teacher stays float32).
    """

    init_from: tuple[int, ...]
    bf16: bool


def kl_and_overlap(p_logits: torch.Tensor, q_logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row: KL(p || q) (differentiable in `q_logits`) and the overlap sum_x min(p, q) (no grad).

    Both from logits float [n, V]; computed in float32.
    """
    log_p = torch.log_softmax(p_logits.float(), dim=-1)
    log_q = torch.log_softmax(q_logits.float(), dim=-1)
    p = log_p.exp()
    kl = (p * (log_p - log_q)).sum(-1)
    overlap = torch.minimum(p, log_q.detach().exp()).sum(-1)
    return kl, overlap


def learning_rate(config: Schedule, step: int) -> float:
    """Linear warm-up over `warmup_steps`, then cosine from `lr` to ``min_lr_ratio * lr`` at `steps`."""
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    progress = (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)
    floor = config.min_lr_ratio
    return config.lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def step_sequences(config: Schedule, num_sequences: int, step: int) -> list[int]:
    """The sequences of optimizer step `step`: epochs are seeded permutations (``seed``, epoch) cut into
    ``sequences_per_step`` blocks (a remainder is dropped), so the order depends on the step alone."""
    per_epoch = num_sequences // config.sequences_per_step
    if per_epoch == 0:
        raise ValueError(f"sequences_per_step {config.sequences_per_step} exceeds the {num_sequences} sequences")
    epoch, index = divmod(step, per_epoch)
    order = torch.randperm(num_sequences, generator=torch.Generator().manual_seed(config.seed * 7919 + epoch))
    start = index * config.sequences_per_step
    return order[start : start + config.sequences_per_step].tolist()


def batch(data: Sequences, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded input ids long [B, L] of sequences `indices`, the (row, position) pairs long [n] x 2
    that carry a target distribution, and the target states float [n, H] there."""
    parts = [data.sequence(s) for s in indices]
    ids = torch.zeros(len(parts), max(len(tokens) for tokens, _, _ in parts), dtype=torch.long)
    rows, positions, hidden = [], [], []
    for r, (tokens, prompt_len, states) in enumerate(parts):
        ids[r, : len(tokens)] = tokens
        rows.append(torch.full((len(states),), r))
        positions.append(torch.arange(prompt_len - 1, len(tokens) - 1))
        hidden.append(states)
    return ids, torch.cat(rows), torch.cat(positions), torch.cat(hidden)


def draft_and_target_logits(
    target: PreTrainedModel, own: DraftLayers, data: Sequences, indices: list[int], bf16: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """(p logits, q logits) float [n, V] at every position of sequences `indices` that has a target state.

    The draft runs on the whole (right-padded, causal) sequences; the target's logits are its stored
    states through the shared head, in float32.
    """
    ids, rows, positions, states = batch(data, indices)
    head = target.lm_head
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        hidden = own.view(target).model(input_ids=ids.to(target.device)).last_hidden_state
        q_logits = head(hidden[rows, positions])
    with torch.no_grad():
        p_logits = head(states.to(device=target.device, dtype=head.weight.dtype))
    return p_logits, q_logits


@torch.no_grad()
def evaluate(
    target: PreTrainedModel, own: DraftLayers, data: Sequences, sequences_per_chunk: int = 4
) -> tuple[float, float]:
    """Mean overlap sum_x min(p, q) and mean KL(p || q) over every target position of `data` (float32)."""
    overlap_sum = kl_sum = 0.0
    for start in range(0, len(data.lengths), sequences_per_chunk):
        indices = list(range(start, min(start + sequences_per_chunk, len(data.lengths))))
        kl, overlap = kl_and_overlap(*draft_and_target_logits(target, own, data, indices, bf16=False))
        overlap_sum += float(overlap.sum())
        kl_sum += float(kl.sum())
    return overlap_sum / data.num_targets, kl_sum / data.num_targets


def _save(path: Path, state: dict) -> None:
    """`torch.save` through ``resispec.formats.atomic.atomic_path`` (never half-written)."""
    with atomic_path(path) as staging:
        torch.save(state, staging)


def train(
    target: PreTrainedModel,
    own: DraftLayers,
    train_data: Sequences,
    eval_data: Sequences,
    config: TrainConfig,
    checkpoint: Path,
    log: Callable[[str], None] = print,
    checkpoint_seconds: float = 180.0,
    log_every: int = 10,
) -> list[dict]:
    """Distil `own` (in place) for ``config.steps`` steps; return the curve, one dict (`CURVE_FIELDS`) per
    evaluation on `eval_data`.

    Resumable: the whole state (weights, optimizer, step, curve, running sums, elapsed time) is written
    to `checkpoint` every `checkpoint_seconds` and at the end, and loaded from there if present; the
    data order is a function of the step, so an interrupted run continues exactly where it stopped. A
    checkpoint of another configuration raises ValueError.
    """
    optimizer = torch.optim.AdamW(own.parameters(), lr=config.lr, betas=(0.9, 0.98), weight_decay=0.0)
    state = {"step": 0, "train_tokens": 0, "curve": [], "elapsed_s": 0.0, "running": [0.0, 0.0, 0]}
    if checkpoint.is_file():
        saved = torch.load(checkpoint, weights_only=False)
        if saved["config"] != asdict(config):
            raise ValueError(f"checkpoint {checkpoint} has config {saved['config']}, not {asdict(config)}")
        own.load_state_dict(saved["own"])
        optimizer.load_state_dict(saved["optimizer"])
        state = saved["state"]
        log(f"train: resumed from {checkpoint} at step {state['step']}")

    def save() -> None:
        payload = {"config": asdict(config), "own": own.state_dict(), "optimizer": optimizer.state_dict()}
        _save(checkpoint, payload | {"state": state})

    def record(step: int) -> None:
        overlap, kl = evaluate(target, own, eval_data)
        kl_sum, overlap_sum, count = state["running"]
        row = dict(step=step, train_tokens=state["train_tokens"], heldout_overlap=overlap, heldout_kl=kl,
                   train_kl=kl_sum / count if count else math.nan,
                   train_overlap=overlap_sum / count if count else math.nan, elapsed_s=state["elapsed_s"])
        state["curve"].append(row)
        state["running"] = [0.0, 0.0, 0]
        log(f"eval: step {step}, {row['train_tokens']} train tokens: held-out overlap {overlap:.4f}, KL {kl:.4f}")

    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    clock = last_save = time.perf_counter()
    if not state["curve"]:
        record(0)
    own.train()
    while state["step"] < config.steps:
        step = state["step"]
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, step)
        indices = step_sequences(config, len(train_data.lengths), step)
        p_logits, q_logits = draft_and_target_logits(target, own, train_data, indices, config.bf16)
        kl, overlap = kl_and_overlap(p_logits, q_logits)
        loss = kl.mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(own.parameters(), 1.0)
        optimizer.step()
        now = time.perf_counter()
        state["elapsed_s"] += now - clock
        clock = now
        state["step"] = step + 1
        state["train_tokens"] += len(kl)
        kl_sum, overlap_sum, count = state["running"]
        state["running"] = [kl_sum + float(kl.detach().sum()), overlap_sum + float(overlap.sum()), count + len(kl)]
        if state["step"] % log_every == 0:
            rate = state["train_tokens"] / max(state["elapsed_s"], 1e-9)
            log(f"train: step {state['step']}/{config.steps}, loss {float(loss.detach()):.4f}, "
                f"{state['train_tokens']} tokens, {rate:.0f} tokens/s, {state['elapsed_s']:.0f} s")
        if state["step"] % config.eval_every == 0 or state["step"] == config.steps:
            own.eval()
            record(state["step"])
            own.train()
        if time.perf_counter() - last_save > checkpoint_seconds:
            save()
            last_save = time.perf_counter()
    own.eval()
    save()
    return state["curve"]
