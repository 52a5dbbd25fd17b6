"""Your own models: a local target or draft checkpoint (a transformers directory or a GGUF file).

- A directory is read with ``from_pretrained(path, local_files_only=True)`` (model and tokenizer).
- A GGUF file is dequantized once into a plain safetensors checkpoint in the resispec cache
  (``resispec.engine.model.gguf.checkpoint_dir``: keyed by the file's name and size), exactly as the built-in target;
  later loads read the cache.

Nothing is fetched from a hub. A draft must share the target's token ids: its vocabulary size must equal
the target's and, when both folders hold a tokenizer, the two token -> id maps must be identical;
otherwise one ``ValueError`` names the difference.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import torch

from resispec.engine.model.gguf import ensure_checkpoint

# imported where used: a warm start of generate imports no transformers (resispec.engine.model.models)
if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


def checkpoint_folder(path: str | Path, role: str) -> Path:
    """The transformers folder holding ``path``'s weights: ``path`` itself for a directory with a
    ``config.json``, the cached dequantized checkpoint (written on first use) for a ``.gguf`` file.
    ``role`` ("target" or "draft") names the argument in the ValueError for anything else."""
    path = Path(path).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ValueError(f"{role}: {path} is a directory without config.json, not a transformers checkpoint")
        return path
    if path.is_file() and path.suffix.lower() == ".gguf":
        return ensure_checkpoint(path)
    if path.is_file():
        raise ValueError(f"{role}: {path} is neither a checkpoint directory nor a .gguf file")
    raise ValueError(f"{role}: no checkpoint at {path}")


def tokenizer_or_none(folder: Path) -> PreTrainedTokenizerBase | None:
    """The folder's tokenizer, or None when it holds no tokenizer files."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError):
        return None


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32,
                    role: str = "target") -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A causal LM (eval mode, no grads) and its tokenizer from a local directory or GGUF file.

    Raises ValueError (naming ``role``) when ``path`` is not a checkpoint, holds no tokenizer, or its
    tokenizer has more tokens than the model's vocabulary.
    """
    from transformers import AutoModelForCausalLM

    folder = checkpoint_folder(path, role)
    tokenizer = tokenizer_or_none(folder)
    if tokenizer is None:
        raise ValueError(f"{role}: {path} holds no tokenizer files (save one with tokenizer.save_pretrained)")
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=dtype)
    if len(tokenizer) > model.config.vocab_size:
        raise ValueError(f"{role}: the tokenizer of {path} has {len(tokenizer)} tokens, more than the model's "
                         f"vocabulary ({model.config.vocab_size})")
    return model.to(device).eval().requires_grad_(False), tokenizer


def check_same_vocabulary(draft: PreTrainedModel, draft_folder: Path, target: PreTrainedModel) -> None:
    """ValueError unless ``draft`` and ``target`` share the vocabulary: equal sizes and, when both
    checkpoint folders hold a tokenizer, equal token -> id maps."""
    if draft.config.vocab_size != target.config.vocab_size:
        raise ValueError(f"draft: {draft_folder} has a vocabulary of {draft.config.vocab_size} tokens, the target's "
                         f"has {target.config.vocab_size}; a draft must use the target's tokenizer")
    draft_tokenizer = tokenizer_or_none(draft_folder)
    target_folder = Path(target.name_or_path) if target.name_or_path else None
    target_tokenizer = tokenizer_or_none(target_folder) if target_folder and target_folder.is_dir() else None
    if draft_tokenizer is None or target_tokenizer is None:
        return
    draft_vocab, target_vocab = draft_tokenizer.get_vocab(), target_tokenizer.get_vocab()
    if draft_vocab != target_vocab:
        differing = sorted(set(draft_vocab.items()) ^ set(target_vocab.items()))
        raise ValueError(f"draft: the tokenizer of {draft_folder} differs from the target's ({len(differing)} "
                         f"token -> id entries differ, e.g. {differing[0]}); a draft must use the target's tokenizer")


def load_draft_model(path: str | Path, target: PreTrainedModel) -> PreTrainedModel:
    """A draft causal LM from a local directory or GGUF file, on the target's device and dtype, checked
    to share the target's vocabulary (``check_same_vocabulary``)."""
    from transformers import AutoModelForCausalLM

    folder = checkpoint_folder(path, "draft")
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=target.dtype)
    check_same_vocabulary(model, folder, target)
    return model.to(target.device).eval().requires_grad_(False)
