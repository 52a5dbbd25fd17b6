"""Distillation data for the draft: the target's own text at T = 1 and its distribution at every position.

For each prompt (rendered with the target's chat template) the target samples continuations at T = 1,
batched with its KV cache, from a seeded `torch.Generator`. Next to the tokens we keep the target's final
hidden state (after its last norm, before the head) at every position a generated token was drawn from:
``p = softmax(lm_head(h))`` is then the target's **full** next-token distribution there, recomputed
exactly (float32) by one head product at training time instead of a 30-layer forward, and stored in 576
floats instead of 49152.

Storage: one safetensors shard per generation batch in a folder keyed by the prompts and the settings
(under the ignored ``out/``). Shard b is drawn with a generator seeded by ``(seed, b)``, so a shard is the
same whether or not an earlier run was interrupted; existing shards are kept, missing ones generated.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import DynamicCache, PreTrainedModel

from resispec.formats.atomic import atomic_path


@dataclass(frozen=True)
class GenerationConfig:
    """How the target's continuations are drawn: `samples` per prompt, at most `max_new_tokens` each
    (stopping at the end-of-turn token), `batch_size` sequences per batched generation, base `seed`."""

    samples: int
    max_new_tokens: int
    batch_size: int
    seed: int


@dataclass(frozen=True)
class Sequences:
    """Target-generated sequences with the target's hidden state at each position that drew a token.

    Attributes:
        tokens: long [total], the sequences (prompt then continuation) one after another.
        lengths: long [S], each sequence's length; prompt_lengths: long [S], its prompt's length.
        prompts: long [S], the index of each sequence's prompt in the encoded prompt list.
        hidden: float32 [sum(lengths - prompt_lengths), H]: for sequence s, rows for positions
            ``prompt_lengths[s] - 1 ... lengths[s] - 2`` in order, the state token ``position + 1`` was
            drawn from (the target's final-norm output, so ``lm_head(hidden)`` are its logits there).
    """

    tokens: torch.Tensor
    lengths: torch.Tensor
    prompt_lengths: torch.Tensor
    prompts: torch.Tensor
    hidden: torch.Tensor

    @property
    def num_targets(self) -> int:
        """Number of positions with a target distribution (generated tokens)."""
        return len(self.hidden)

    def sequence(self, s: int) -> tuple[torch.Tensor, int, torch.Tensor]:
        """(tokens long [L], prompt length, hidden [L - prompt length, H]) of sequence `s`."""
        starts = torch.cumsum(self.lengths, 0) - self.lengths
        generated = self.lengths - self.prompt_lengths
        hidden_starts = torch.cumsum(generated, 0) - generated
        start, length, h0 = int(starts[s]), int(self.lengths[s]), int(hidden_starts[s])
        return (
            self.tokens[start : start + length],
            int(self.prompt_lengths[s]),
            self.hidden[h0 : h0 + int(generated[s])],
        )

    @staticmethod
    def concat(parts: Sequence[Sequences]) -> Sequences:
        """The sequences of `parts`, in order."""
        return Sequences(*(torch.cat([getattr(p, f) for p in parts]) for f in Sequences.__dataclass_fields__))


@torch.no_grad()
def sample_continuations(
    target: PreTrainedModel,
    prompts: Sequence[torch.Tensor],
    max_new_tokens: int,
    eos_token_id: int | None,
    generator: torch.Generator,
) -> Sequences:
    """Continue every prompt at T = 1 (one batched generation, left-padded, with the KV cache).

    Token t+1 is drawn from ``softmax(lm_head(h_t))`` (float32) with `generator`; a sequence stops after
    `eos_token_id` or `max_new_tokens` tokens. Returns the sequences and the states ``h_t`` (see
    `Sequences`); the `prompts` field holds 0..len(prompts)-1.
    """
    if max_new_tokens < 1 or not prompts:
        raise ValueError(f"max_new_tokens must be >= 1 and prompts non-empty, got {max_new_tokens}, {len(prompts)}")
    batch, width = len(prompts), max(len(p) for p in prompts)
    ids = torch.zeros(batch, width, dtype=torch.long)
    mask = torch.zeros(batch, width, dtype=torch.long)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = prompt
        mask[row, width - len(prompt) :] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    cache = DynamicCache(config=target.config)
    hidden_steps, token_steps = [], []
    alive = torch.ones(batch, dtype=torch.bool)
    alive_steps = []
    for _ in range(max_new_tokens):
        state = target.model(
            input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache, use_cache=True
        ).last_hidden_state[:, -1].float()
        probs = torch.softmax(target.lm_head(state).float(), dim=-1)
        token = torch.multinomial(probs, 1, generator=generator)[:, 0]
        hidden_steps.append(state)
        token_steps.append(token)
        alive_steps.append(alive.clone())
        if eos_token_id is not None:
            alive &= token != eos_token_id
        if not alive.any():
            break
        ids, positions = token[:, None], positions[:, -1:] + 1
        mask = torch.cat([mask, torch.ones(batch, 1, dtype=torch.long)], dim=1)
    hidden, tokens, kept = torch.stack(hidden_steps, 1), torch.stack(token_steps, 1), torch.stack(alive_steps, 1)
    counts = kept.sum(1)
    return Sequences(
        tokens=torch.cat([torch.cat([p, tokens[r, : counts[r]]]) for r, p in enumerate(prompts)]),
        lengths=torch.tensor([len(p) for p in prompts]) + counts,
        prompt_lengths=torch.tensor([len(p) for p in prompts]),
        prompts=torch.arange(batch),
        hidden=hidden[kept],
    )


def data_folder(root: Path, prompts: Sequence[torch.Tensor], config: GenerationConfig, model_tag: str) -> Path:
    """``root/<hash>``: the hash covers the encoded prompts, the generation settings and the model."""
    digest = hashlib.sha256(json.dumps([asdict(config), model_tag, [p.tolist() for p in prompts]]).encode())
    return Path(root) / digest.hexdigest()[:16]


def generate_shards(
    target: PreTrainedModel,
    prompts: Sequence[torch.Tensor],
    config: GenerationConfig,
    folder: Path,
    eos_token_id: int | None,
    log: Callable[[str], None] = print,
) -> Sequences:
    """All ``config.samples`` continuations of every prompt, generated shard by shard into `folder`.

    Jobs (prompt, sample) are ordered by prompt length (less padding) and cut into batches; batch b is
    drawn with ``torch.Generator().manual_seed(config.seed * 1_000_003 + b)`` and saved atomically as
    ``shard_{b:05d}.safetensors``. Shards already there are loaded, not redrawn (resumable).
    """
    jobs = sorted(
        ((i, s) for i in range(len(prompts)) for s in range(config.samples)), key=lambda j: (len(prompts[j[0]]), j)
    )
    batches = [jobs[b : b + config.batch_size] for b in range(0, len(jobs), config.batch_size)]
    folder.mkdir(parents=True, exist_ok=True)
    parts = []
    for b, batch in enumerate(batches):
        path = folder / f"shard_{b:05d}.safetensors"
        if not path.is_file():
            generator = torch.Generator().manual_seed(config.seed * 1_000_003 + b)
            part = sample_continuations(
                target, [prompts[i] for i, _ in batch], config.max_new_tokens, eos_token_id, generator
            )
            part = Sequences(
                part.tokens, part.lengths, part.prompt_lengths, torch.tensor([i for i, _ in batch]), part.hidden
            )
            with atomic_path(path) as staging:
                save_file({f: getattr(part, f).contiguous() for f in Sequences.__dataclass_fields__}, staging)
            log(f"data: shard {b + 1}/{len(batches)}, {part.num_targets} generated tokens -> {path.name}")
        parts.append(Sequences(**load_file(path)))
    return Sequences.concat(parts)
