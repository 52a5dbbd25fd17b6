"""The prompts, below every room that reads them (decode's calibration, train's distillation, bench): the
draft-training set ``prompts.json`` (its ``train`` split calibrates ``--tree auto`` too) and the held-out
benchmark prompts ``bench_prompts.json`` (never used for training or tuning; a test keeps the two apart)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

PROMPTS_PATH = Path(__file__).parent / "prompts.json"
BENCH_PROMPTS_PATH = Path(__file__).parent / "bench_prompts.json"


@dataclass(frozen=True)
class Prompt:
    """One entry of the prompt set: its category, split ('train' or 'heldout') and user message."""

    category: str
    split: str
    text: str


def load_prompts(path: Path = PROMPTS_PATH) -> list[Prompt]:
    """The prompt set (``engine/data/prompts.json``): a list of `Prompt`."""
    document = json.loads(Path(path).read_text())
    return [Prompt(entry["category"], entry["split"], entry["prompt"]) for entry in document["prompts"]]


def load_bench_prompts(path: Path = BENCH_PROMPTS_PATH) -> list[str]:
    """The benchmark's held-out user messages (``engine/data/bench_prompts.json``)."""
    return json.loads(Path(path).read_text())


def encode_prompts(tokenizer, prompts: Sequence[Prompt]) -> list[torch.Tensor]:
    """Each prompt as one user turn in the tokenizer's chat template, assistant turn opened: long [T_i]."""
    return [
        torch.tensor(
            tokenizer.apply_chat_template(
                [{"role": "user", "content": p.text}], add_generation_prompt=True, tokenize=True, return_dict=False
            ),
            dtype=torch.long,
        )
        for p in prompts
    ]
