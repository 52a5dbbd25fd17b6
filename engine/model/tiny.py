"""Tiny random Llama models (vocab <= 8) usable as target p or draft q in fast exactness tests."""

from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def tiny_llama(seed: int, vocab_size: int = 8, num_layers: int = 2, hidden_size: int = 16) -> LlamaForCausalLM:
    """A float32 `LlamaForCausalLM` in eval mode with weights drawn from a Generator seeded by `seed`.

    Two heads sharing one key/value head (grouped-query attention, like the real target), untied head.
    Linear and embedding weights are N(0, 0.5^2) and norm weights 1, so next-token distributions are
    neither flat nor one-hot. The global torch RNG is left untouched.
    """
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=512,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    model = LlamaForCausalLM(config)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):
                parameter.fill_(1.0)
            else:
                parameter.normal_(0.0, 0.5, generator=generator)
    return model.eval()


def tiny_pair(seed: int, vocab_size: int = 8) -> tuple[LlamaForCausalLM, LlamaForCausalLM]:
    """A target p and a draft q for tests: two `tiny_llama` models from seeds derived from `seed`."""
    return tiny_llama(2 * seed, vocab_size), tiny_llama(2 * seed + 1, vocab_size, num_layers=1)
