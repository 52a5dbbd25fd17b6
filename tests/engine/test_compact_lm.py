"""CompactLM (lean Llama forward, preallocated cache), padded small-row products and the int8 scheme."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional

import engine.compact_lm as compact_lm
from engine.compact_lm import CompactLM, lm_for
from engine.drafts.self_draft import SelfDraft
from engine.quantize import Int8Linear, quantized_copy
from engine.small_rows import PaddedLinear, mkl_packing_available
from engine.tiny import tiny_llama
from engine.tree import CandidateTree
from engine.tree_lm import TreeLM


def _rounds(lm, prompt):
    """Logits of two rounds on a (2, 2) tree with a commit between them (pending tokens included)."""
    tree = CandidateTree.from_branching((2, 2))
    tokens = torch.tensor([int(prompt[-1]), 1, 5, 2, 2, 7, 0])
    lm.prefill(prompt)
    first = lm.grow(tokens, tree.parents)
    lm.commit(torch.tensor([int(prompt[-1]), 5, 7, 3]))  # path to node 5, then a token past the tree
    second = lm.grow(torch.tensor([6, 4]), torch.tensor([-1, 0]))
    return first, second


@pytest.mark.parametrize("capacity", [512, 4])
def test_compact_forward_equals_the_transformers_forward(tiny_models, monkeypatch, capacity):
    monkeypatch.setattr(compact_lm, "INITIAL_CAPACITY", capacity)  # 4: the cache doubles several times
    prompt = torch.tensor([3, 1, 4, 1, 5, 2])
    for model in tiny_models:
        for expected, got in zip(_rounds(TreeLM(model), prompt), _rounds(CompactLM(model), prompt)):
            torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_lm_for_picks_compact_for_llama_models_only(tiny_models):
    assert isinstance(lm_for(tiny_models[0]), CompactLM)
    model = tiny_llama(seed=1)
    model.config.attention_bias = True  # not a layout CompactLM reproduces
    assert type(lm_for(model)) is TreeLM
    with pytest.raises(TypeError, match="Llama-family"):
        CompactLM(model)


@pytest.mark.skipif(not mkl_packing_available(torch.ones(1)), reason="torch built without MKL")
def test_padded_linear_equals_the_plain_product_for_every_row_count():
    generator = torch.Generator().manual_seed(0)
    weight = torch.randn(300, 64, generator=generator)
    padded = PaddedLinear(weight)
    for rows in range(1, 21):
        x = torch.randn(rows, 64, generator=generator)
        out = padded(x)
        assert out.shape == (rows, 300)
        torch.testing.assert_close(out, functional.linear(x, weight), rtol=1e-5, atol=1e-5)


def test_int8_linear_error_is_within_the_quantization_bound():
    generator = torch.Generator().manual_seed(1)
    linear = torch.nn.Linear(64, 48, bias=False)
    linear.weight.data = torch.randn(48, 64, generator=generator)
    quantized = Int8Linear.from_linear(linear)
    scales = linear.weight.abs().amax(dim=1) / 127
    torch.testing.assert_close(quantized.scales.float(), scales, rtol=1e-2, atol=0)
    assert quantized.weight_int8.dtype == torch.int8 and int(quantized.weight_int8.abs().max()) == 127
    x = torch.randn(5, 64, generator=generator)
    exact = functional.linear(x, linear.weight)
    bound = x.abs().sum(dim=1, keepdim=True) * scales / 2  # rounding of each weight by at most s/2
    slack = 0.02 * exact.abs() + 0.05  # bfloat16 activations and output
    assert ((quantized(x).float() - exact).abs() <= bound + slack).all()


def test_quantized_copies_leave_the_target_untouched(tiny_models):
    target = tiny_models[0]
    before = {name: t.clone() for name, t in target.state_dict().items()}
    int8 = quantized_copy(target, "int8")
    assert isinstance(int8.lm_head, Int8Linear) and int8.model.embed_tokens.weight.dtype == torch.bfloat16
    assert all(isinstance(layer.mlp.down_proj, Int8Linear) for layer in int8.model.layers)
    assert quantized_copy(target, "bf16").lm_head.weight.dtype == torch.bfloat16
    assert all(torch.equal(before[name], t) for name, t in target.state_dict().items())
    with pytest.raises(ValueError, match="scheme"):
        quantized_copy(target, "int4")
    draft = SelfDraft(target, "int8")
    assert draft.model is SelfDraft(target, "int8").model  # built once per target


@pytest.mark.real_model
def test_real_int8_self_draft_is_close_to_the_target(real_target):
    model, tokenizer = real_target
    ids = tokenizer("Bread dough rises because yeast ferments the sugars in flour and releases", return_tensors="pt").input_ids[0]
    chain = torch.arange(-1, len(ids) - 1)
    target, draft = CompactLM(model), SelfDraft(model, "int8")
    target.prefill(ids[:1])
    draft.prefill(ids[:1])
    p = torch.softmax(target.grow(ids, chain).double(), -1)
    q = torch.softmax(draft.grow(ids, chain).double(), -1)
    overlap = torch.minimum(p, q).sum(-1)
    assert float(overlap.mean()) > 0.9, overlap
