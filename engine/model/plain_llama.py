"""A Llama checkpoint's weights in plain torch modules, read without transformers (the warm start of generate).

Importing transformers' ``LlamaForCausalLM`` costs 5-6 s on this machine (it pulls in ``torch._dynamo``,
``torch.distributed.tensor``, sympy and scipy), more than everything the engine does after the imports. The
engine never runs that class's forward on the paths `resispec.engine.model.models.load_target` serves with
``transformers_free``: the target and its self-drafts are computed by `resispec.engine.runtime.compact_lm.CompactLM`,
which reads only the weights. `PlainLlama` holds those weights, read straight from a checkpoint folder
(``config.json`` + ``model.safetensors``), under the module names and attributes of transformers' Llama
(``model.embed_tokens``, ``model.layers.N.self_attn.{q,k,v,o}_proj``, ``model.layers.N.mlp.{gate,up,down}_proj``,
``model.layers.N.{input,post_attention}_layernorm`` with ``weight`` and ``variance_epsilon``, ``model.norm``,
``model.rotary_emb``, ``lm_head``, tied to the embedding when the config says so), so every reader of the
transformers model (`CompactLM`, `resispec.engine.model.quantize.quantized_copy` and its products cached by module name,
`resispec.engine.model.native.native_model`) takes it alike. It has no forward of its own: ``CompactLM`` computes.

The rotary embedding (`PlainRotary`) is default RoPE over ``d = head_dim``:

    inv_freq_j = 1 / theta^(2j / d)   (j = 0 .. d/2 - 1; float32, a buffer: a bfloat16 copy rounds it),
    angles[t] = [position_t * inv_freq, position_t * inv_freq]   (float32, [n, d]),
    cos, sin = cos(angles), sin(angles)   cast to the input's dtype,

the same float32 operations as transformers' ``LlamaRotaryEmbedding`` (each angle is one rounded product), so
the same bits (tests pin the two modules, and whole decodes, equal). `plain_problem` names what a config asks
for that this does not reproduce (another architecture, biases, scaled or partial rotary, sliding windows).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import torch
from safetensors.torch import load_file
from torch import nn

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"


def plain_problem(config: dict) -> str | None:
    """Why `PlainLlama` cannot hold the model of ``config`` (a ``config.json`` as a dict; None: it can)."""
    rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
    checks = {
        "model_type is not llama": config.get("model_type") != "llama",
        "hidden_act is not silu": config.get("hidden_act") != "silu",
        "biased projections": bool(config.get("attention_bias") or config.get("mlp_bias")),
        "a sliding window": config.get("sliding_window") is not None,
        "rotary embedding other than the default": rope.get("rope_type", rope.get("type", "default")) != "default",
        "partial rotary embedding": config.get("partial_rotary_factor", 1.0) != 1.0,
    }
    problems = [name for name, failed in checks.items() if failed]
    return "; ".join(problems) if problems else None


def _rope_theta(config: dict) -> float:
    rope = config.get("rope_parameters") or {}
    return float(rope.get("rope_theta", config.get("rope_theta", 10000.0)))


class PlainRotary(nn.Module):
    """Default rotary embedding (module docstring): ``forward(x, positions)`` -> ``(cos, sin)``, each
    [batch, n, head_dim] in ``x``'s dtype for ``positions`` long [batch, n]."""

    def __init__(self, head_dim: int, theta: float) -> None:
        super().__init__()
        exponents = torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim
        self.register_buffer("inv_freq", 1.0 / theta ** exponents, persistent=False)

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        angles = positions[:, :, None].float() * self.inv_freq.float()
        angles = torch.cat((angles, angles), dim=-1)
        return angles.cos().to(x.dtype), angles.sin().to(x.dtype)


class PlainRMSNorm(nn.Module):
    """An RMSNorm's weight and epsilon (`resispec.engine.runtime.compact_lm.rms_norm` computes with them)."""

    def __init__(self, weight: torch.Tensor, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight, requires_grad=False)
        self.variance_epsilon = eps


def _linear(weight: torch.Tensor) -> nn.Linear:
    """A bias-free ``nn.Linear`` holding ``weight`` [out, in] (built on the meta device: no initialisation; a
    parameter is held itself, so a tied head shares the embedding's)."""
    with torch.device("meta"):
        linear = nn.Linear(weight.shape[1], weight.shape[0], bias=False)
    linear.weight = weight if isinstance(weight, nn.Parameter) else nn.Parameter(weight, requires_grad=False)
    return linear


class _Holder(nn.Module):
    """A module that only names its children (a layer, its attention, its MLP)."""

    def __init__(self, **children: nn.Module) -> None:
        super().__init__()
        for name, child in children.items():
            self.add_module(name, child)


class PlainLlama(nn.Module):
    """A Llama checkpoint's weights and config without transformers (module docstring); build with `load`.

    ``config``: the ``config.json`` as attributes (with ``head_dim`` and ``num_key_value_heads`` filled in where
    the file leaves them to their defaults, and ``_name_or_path`` the folder, as transformers sets it);
    ``name_or_path``: the folder (where `resispec.engine.model.quantize` caches the self-drafts' products).
    """

    def __init__(self, config: SimpleNamespace, tensors: dict[str, torch.Tensor]) -> None:
        super().__init__()
        self.config = config
        self.name_or_path = config._name_or_path
        unused = dict(tensors)

        def take(name: str) -> torch.Tensor:
            if name not in unused:
                raise ValueError(f"{config._name_or_path}: {WEIGHTS_FILE} has no tensor {name}")
            return unused.pop(name)

        def norm(name: str) -> PlainRMSNorm:
            return PlainRMSNorm(take(f"{name}.weight"), config.rms_norm_eps)

        layers = nn.ModuleList()
        for index in range(config.num_hidden_layers):
            prefix = f"model.layers.{index}"
            attention = _Holder(**{name: _linear(take(f"{prefix}.self_attn.{name}.weight"))
                                   for name in ("q_proj", "k_proj", "v_proj", "o_proj")})
            mlp = _Holder(**{name: _linear(take(f"{prefix}.mlp.{name}.weight"))
                             for name in ("gate_proj", "up_proj", "down_proj")})
            layers.append(_Holder(self_attn=attention, mlp=mlp, input_layernorm=norm(f"{prefix}.input_layernorm"),
                                  post_attention_layernorm=norm(f"{prefix}.post_attention_layernorm")))
        embed = nn.Embedding.from_pretrained(take("model.embed_tokens.weight"), freeze=True)
        self.model = _Holder(embed_tokens=embed, layers=layers, norm=norm("model.norm"),
                             rotary_emb=PlainRotary(config.head_dim, _rope_theta(vars(config))))
        self.lm_head = _linear(embed.weight if config.tie_word_embeddings else take("lm_head.weight"))
        unused.pop("lm_head.weight", None)  # a tied head may be stored too
        if unused:
            raise ValueError(f"{config._name_or_path}: {WEIGHTS_FILE} holds tensors a Llama model has no place "
                             f"for ({len(unused)}, e.g. {sorted(unused)[0]})")

    @classmethod
    def load(cls, folder: str | Path, dtype: torch.dtype = torch.float32) -> PlainLlama:
        """The model of the checkpoint ``folder`` (``config.json``, ``model.safetensors``) in ``dtype``, eval mode,
        no grads. ValueError naming the folder for a config `plain_problem` refuses or tensors that do not fit."""
        folder = Path(folder)
        raw = json.loads((folder / CONFIG_FILE).read_text())
        problem = plain_problem(raw)
        if problem is not None:
            raise ValueError(f"{folder}: not a model PlainLlama holds ({problem})")
        config = SimpleNamespace(**raw)
        config.head_dim = raw.get("head_dim") or raw["hidden_size"] // raw["num_attention_heads"]
        config.num_key_value_heads = raw.get("num_key_value_heads") or raw["num_attention_heads"]
        config.tie_word_embeddings = raw.get("tie_word_embeddings", False)
        config._name_or_path = str(folder)
        tensors = {name: tensor.to(dtype) for name, tensor in load_file(folder / WEIGHTS_FILE).items()}
        return cls(config, tensors).eval().requires_grad_(False)

    def get_output_embeddings(self) -> nn.Linear:
        """The output head (``lm_head``), as transformers names it."""
        return self.lm_head

    @property
    def device(self) -> torch.device:
        return self.model.embed_tokens.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.model.embed_tokens.weight.dtype
