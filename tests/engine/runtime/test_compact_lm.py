"""CompactLM (lean Llama forward, preallocated cache), padded small-row products and the int4 / int8 schemes."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional

import resispec.engine.runtime.compact_lm as compact_lm
from resispec.engine.drafts.self_draft import SelfDraft
from resispec.engine.model.quantize import (
    INT4_GROUP,
    KERNEL_ALIGNMENT,
    Int4Linear,
    Int8Linear,
    int4_pack_rows,
    quantized_copy,
)
from resispec.engine.model.tiny import tiny_llama
from resispec.engine.runtime.compact_lm import CompactLM, lm_for
from resispec.engine.runtime.small_rows import PaddedLinear, mkl_packing_available
from resispec.engine.runtime.tree import CandidateTree
from resispec.engine.runtime.tree_lm import TreeLM


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
    assert padded.packed == {}  # packed on first use: `ar` never pays for the other buckets' copies
    padded(torch.randn(1, 64, generator=generator))
    assert set(padded.packed) == {1}
    padded.prepare(5, 12)  # a decoder feeding 5 to 12 rows: the 8- and 16-row buckets
    assert set(padded.packed) == {1, 8, 16}
    fresh = PaddedLinear(weight)
    fresh.prepare(2, 8)
    assert set(fresh.packed) == {2, 4, 8}
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


def _dequantized(layer: Int4Linear) -> torch.Tensor:
    """W~ = (L - 8) s + z per group (resispec.engine.model.quantize), from the layer's levels and (s, z)."""
    scales, zeros = (layer.scales_and_zeros[..., i].float().t().repeat_interleave(INT4_GROUP, dim=1) for i in (0, 1))
    return (layer.levels.float() - 8) * scales + zeros


def test_int4_linear_is_within_half_a_step_of_each_weight_and_computes_its_dequantized_product():
    generator = torch.Generator().manual_seed(2)
    linear = torch.nn.Linear(96, 48, bias=False)
    linear.weight.data = torch.randn(48, 96, generator=generator)
    quantized = Int4Linear.from_linear(linear)
    assert quantized.levels.dtype == torch.uint8
    assert int(quantized.levels.max()) == 15 and int(quantized.levels.min()) == 0
    step = quantized.scales_and_zeros[..., 0].float().t().repeat_interleave(INT4_GROUP, dim=1)
    dequantized = _dequantized(quantized)
    assert ((dequantized - linear.weight).abs() <= step / 2 * 1.02 + 1e-3).all()  # bfloat16 (s, z)
    x = torch.randn(5, 96, generator=generator)
    reference = functional.linear(x.to(torch.bfloat16).float(), dequantized)
    torch.testing.assert_close(quantized(x).float(), reference, rtol=2e-2, atol=5e-2)
    torch.testing.assert_close(quantized(x[None]).float()[0], quantized(x).float())  # any leading shape


@pytest.mark.parametrize("blocks", [(1, 0.25, 0.5), (1, 2, 0.25), (1, 0.5, 0.25)])  # anew / side by side / anew
def test_fused_int4_layers_equal_the_separate_ones(blocks):
    """Part sizes in blocks of the kernel's packed layout on this CPU (32 rows on AVX2, 64 on AVX-512)."""
    generator = torch.Generator().manual_seed(3)
    parts = []
    for rows in (int(share * int4_pack_rows()) for share in blocks):
        linear = torch.nn.Linear(64, rows, bias=False)
        linear.weight.data = torch.randn(rows, 64, generator=generator)
        parts.append(Int4Linear.from_linear(linear))
    x = torch.randn(3, 64, generator=generator).to(torch.bfloat16)
    fused = Int4Linear.concatenate(parts)
    torch.testing.assert_close(fused(x), torch.cat([part(x) for part in parts], dim=-1))
    assert torch.equal(fused.packed, torch._convert_weight_to_int4pack_for_cpu(fused.levels.to(torch.int32), 1))


def test_a_mixed_int4_int8_fusion_computes_the_parts_side_by_side():
    generator = torch.Generator().manual_seed(4)
    wide, narrow = torch.nn.Linear(64, 32, bias=False), torch.nn.Linear(64, 8, bias=False)  # 8 outputs: int8
    for linear in (wide, narrow):
        linear.weight.data = torch.randn(linear.weight.shape, generator=generator)
    parts = [Int4Linear.from_linear(wide), Int8Linear.from_linear(narrow)]
    x = torch.randn(3, 64, generator=generator).to(torch.bfloat16)
    fused = compact_lm.bf16_projection(parts)
    torch.testing.assert_close(fused(x), torch.cat([part(x) for part in parts], dim=-1))


def test_int4_rejects_what_its_kernel_cannot_take():
    with pytest.raises(ValueError, match="out % 16"):
        Int4Linear.from_linear(torch.nn.Linear(64, 24, bias=False))
    with pytest.raises(ValueError, match="bias"):
        Int4Linear.from_linear(torch.nn.Linear(64, 32, bias=True))


def test_int4_copy_quantizes_the_layers_it_can_and_keeps_an_int8_head():
    wide = quantized_copy(tiny_llama(0, hidden_size=32), "int4")
    assert all(isinstance(module, Int4Linear) for layer in wide.model.layers
               for module in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.mlp.down_proj))
    assert isinstance(wide.lm_head, Int8Linear)
    narrow = quantized_copy(tiny_llama(0, hidden_size=16), "int4")  # 16 inputs: not a multiple of the group
    assert all(isinstance(layer.mlp.up_proj, Int8Linear) for layer in narrow.model.layers)
    target = tiny_llama(1, hidden_size=32)
    draft, reference = SelfDraft(target, "int4"), TreeLM(target)
    prompt = torch.tensor([1, 4, 2])
    for lm in (draft, reference):
        lm.prefill(prompt)
    chain = torch.arange(-1, 2)
    q = torch.softmax(draft.grow(torch.tensor([2, 5, 3]), chain).float(), -1)
    p = torch.softmax(reference.grow(torch.tensor([2, 5, 3]), chain).float(), -1)
    # The same network, coarsely quantized: overlap 0.66-0.76 on this tiny net of large random weights (an
    # unrelated network of the same shape: 0.24-0.28); the real target's int4 copy is tested below.
    assert float(torch.minimum(p, q).sum(-1).min()) > 0.5


def test_quantized_copies_leave_the_target_untouched(tiny_models):
    target = tiny_models[0]
    before = {name: t.clone() for name, t in target.state_dict().items()}
    int8 = quantized_copy(target, "int8")
    assert isinstance(int8.lm_head, Int8Linear) and int8.model.embed_tokens.weight.dtype == torch.bfloat16
    assert all(isinstance(layer.mlp.down_proj, Int8Linear) for layer in int8.model.layers)
    assert quantized_copy(target, "bf16").lm_head.weight.dtype == torch.bfloat16
    assert all(torch.equal(before[name], t) for name, t in target.state_dict().items())
    with pytest.raises(ValueError, match="scheme"):
        quantized_copy(target, "int2")
    draft = SelfDraft(target, "int8")
    assert draft.model is SelfDraft(target, "int8").model  # built once per target


@pytest.mark.real_model
@pytest.mark.parametrize("scheme", ["int4", "int8"])
def test_real_quantized_self_drafts_are_close_to_the_target(real_target, scheme):
    model, tokenizer = real_target
    text = "Bread dough rises because yeast ferments the sugars in flour and releases"
    ids = tokenizer(text, return_tensors="pt").input_ids[0]
    chain = torch.arange(-1, len(ids) - 1)
    target, draft = CompactLM(model), SelfDraft(model, scheme)
    target.prefill(ids[:1])
    draft.prefill(ids[:1])
    p = torch.softmax(target.grow(ids, chain).double(), -1)
    q = torch.softmax(draft.grow(ids, chain).double(), -1)
    overlap = torch.minimum(p, q).sum(-1)
    assert float(overlap.mean()) > 0.9, overlap


def test_prefill_from_copies_the_prompt_cache_and_checks_its_source():
    model = tiny_llama(4)
    source, copied, own = CompactLM(model), CompactLM(model), CompactLM(model)
    prompt = torch.tensor([3, 1, 4, 1, 5])
    source.prefill(prompt)
    copied.prefill_from(source, prompt)
    own.prefill(prompt)
    chain = torch.arange(-1, 2)
    torch.testing.assert_close(copied.grow(torch.tensor([5, 2, 6]), chain), own.grow(torch.tensor([5, 2, 6]), chain))
    with pytest.raises(ValueError, match="cache shapes differ"):
        CompactLM(tiny_llama(4, num_layers=1)).prefill_from(source, prompt)
    source.grow(torch.tensor([5]), torch.tensor([-1]))
    with pytest.raises(ValueError, match="freshly prefilled"):
        CompactLM(model).prefill_from(source, prompt)  # source has grown a tree since


def test_the_decoder_starts_a_self_draft_on_its_targets_prompt_cache(monkeypatch):
    from resispec.engine.decode.decoding import Decoder

    target = tiny_llama(6, hidden_size=32)
    draft = SelfDraft(target, "int8")
    assert draft.shares_prompt_cache_with(CompactLM(target)) and not draft.shares_prompt_cache_with(TreeLM(target))
    assert not SelfDraft(tiny_llama(7), "int8").shares_prompt_cache_with(CompactLM(target))

    def no_prefill(_ids):
        raise AssertionError("the self-draft ran a prefill forward of its own")

    monkeypatch.setattr(draft, "prefill", no_prefill)
    tokens = list(Decoder(target, draft, "rrs", (1, 1)).generate(torch.tensor([1, 2, 3]), 4))
    assert len(tokens) == 4


@pytest.mark.skipif(not mkl_packing_available(torch.ones(1)), reason="torch built without MKL")
def test_a_decoder_packs_the_targets_buckets_it_will_use_before_it_decodes(tiny_models):
    from resispec.engine.decode.decoding import Decoder

    assert set(Decoder(tiny_llama(seed=11), None, "ar").target.weights.head.packed) == {1}
    target = tiny_llama(seed=12)
    speculative = Decoder(target, TreeLM(tiny_models[1]), "rrs", (3, 2))  # 3 to 10 rows: buckets 4, 8 and 16
    assert set(speculative.target.weights.head.packed) == {4, 8, 16}


def test_the_int4_kernels_block_is_the_smallest_that_packs_apart_as_together():
    block = int4_pack_rows()
    for rows, same in ((block, True), (block // 2, False)):
        levels = torch.randint(0, 16, (2 * rows, INT4_GROUP), generator=torch.Generator().manual_seed(5),
                               dtype=torch.int32)
        apart = torch.cat([torch._convert_weight_to_int4pack_for_cpu(half, 1) for half in levels.split(rows)])
        assert torch.equal(apart, torch._convert_weight_to_int4pack_for_cpu(levels, 1)) is same


def test_integer_layers_hold_aligned_weights_even_when_given_views_8_bytes_past_a_boundary():
    """The int8 kernel's AVX-512 path crashes on weights so placed (tensors read from a safetensors file)."""
    storage = torch.zeros(64 * 64 + KERNEL_ALIGNMENT, dtype=torch.int8)
    offset = (8 - storage.data_ptr()) % KERNEL_ALIGNMENT
    weights = storage[offset: offset + 64 * 64].view(64, 64)
    assert weights.data_ptr() % KERNEL_ALIGNMENT == 8
    scales = torch.ones(65, dtype=torch.bfloat16)[1:]
    layer = Int8Linear(weights, scales)
    assert layer.weight_int8.data_ptr() % KERNEL_ALIGNMENT == 0 and layer.scales.data_ptr() % KERNEL_ALIGNMENT == 0
    assert torch.equal(layer.weight_int8, weights)
    scales_and_zeros = torch.ones(2 * 64 * 2 + 4, dtype=torch.bfloat16)[4:].view(2, 64, 2)  # 8 bytes in
    int4 = Int4Linear(weights.to(torch.uint8) % 16, scales_and_zeros)
    assert scales_and_zeros.data_ptr() % KERNEL_ALIGNMENT == 8
    assert int4.scales_and_zeros.data_ptr() % KERNEL_ALIGNMENT == 0


def test_row_by_row_attention_on_a_slice_equals_it_on_the_gathered_entries_bit_for_bit():
    generator = torch.Generator().manual_seed(6)
    keys, values = torch.randn(3, 1024, 64, generator=generator), torch.randn(3, 1024, 64, generator=generator)
    queries = torch.randn(9, 2, 64, generator=generator)
    for count in (*range(1, 40), 63, 64, 65, 127, 128, 129, 300, 511, 512, 513, 1000):
        sliced = compact_lm.attend_row_by_row(queries, keys, values, [count, count])
        gathered = compact_lm.attend_row_by_row(queries, keys, values, [torch.arange(count)] * 2)
        assert torch.equal(sliced, gathered), count


def test_entries_seen_slices_prefixes_and_gathers_the_rest():
    allowed = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 0, 1]], dtype=torch.bool)
    seen = compact_lm.entries_seen(allowed)
    assert seen[:2] == [3, 4] and seen[2].tolist() == [0, 1, 2, 4]


def test_rotate_with_the_signed_sine_is_the_textbook_rotary_bit_for_bit():
    generator = torch.Generator().manual_seed(8)
    x, angles = torch.randn(5, 7, 64, generator=generator), torch.randn(7, 32, generator=generator) * 9
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
    textbook = x * cos + torch.cat((-x[..., 32:], x[..., :32]), dim=-1) * sin
    assert torch.equal(compact_lm.rotate(x, cos, compact_lm.signed_sin(sin)), textbook)
