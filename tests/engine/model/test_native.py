"""The native target (`resispec.engine.model.native`) on a tiny synthetic Q4_1 GGUF: its products against a float64
reference of the file's blocks, its logits against transformers' own float64 dequantization of the same file,
one row vs many rows, greedy speculative = greedy autoregressive, and the unsupported-type error."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType, GGUFReader
from gguf.quants import dequantize
from transformers import AutoModelForCausalLM

from resispec.engine.decode.calibration import calibration_key
from resispec.engine.decode.decoding import Decoder
from resispec.engine.decode.processing import Sampling
from resispec.engine.drafts.feature_draft import FeatureDraft, FeatureHead
from resispec.engine.drafts.layer_skip import LayerSkipDraft
from resispec.engine.drafts.ngram import NGramDraft
from resispec.engine.drafts.trained import save_draft
from resispec.engine.model.compute import target_compute_of
from resispec.engine.model.gguf import checkpoint_dir
from resispec.engine.model.models import check_target_compute, with_compute
from resispec.engine.model.native import (
    CACHE_FORMAT,
    Q4_1Linear,
    Q8_0Linear,
    describe_native,
    native_head_for_this_cpu,
    native_model,
)
from resispec.engine.runtime.compact_lm import CompactLM
from resispec.engine.runtime.tree_lm import TreeLM
from tests.engine.model.test_models import requires_target_wheel
from tests.engine.model.tiny_gguf import write_tiny_gguf

BF16_STEP = 2.0 ** -8
"""Relative rounding step of bfloat16 (8 significant bits)."""


@pytest.fixture(scope="module", autouse=True)
def own_cache(tmp_path_factory):
    """The resispec cache in a temporary folder (the native layers are cached there)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RESISPEC_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(scope="module")
def tiny_file(tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("native") / "tiny.gguf")


@pytest.fixture(scope="module")
def float_and_native(tiny_file):
    """(transformers' float32 model of the file, the native target around it)."""
    model = AutoModelForCausalLM.from_pretrained(tiny_file.parent, gguf_file=tiny_file.name, local_files_only=True,
                                                 dtype=torch.float32).eval().requires_grad_(False)
    return model, native_model(model, tiny_file)


def _bf16(x: np.ndarray) -> np.ndarray:
    return torch.from_numpy(x).to(torch.bfloat16).double().numpy()


@pytest.mark.parametrize("name", ["blk.0.ffn_down.weight", "blk.1.ffn_up.weight"])
def test_q4_1_layer_computes_the_blocks_with_bfloat16_scales(tiny_file, name):
    """y = x_bf16 W~^T with W~ = (L - 8) bf16(d) + bf16(m + 8 d), L recovered from gguf's own dequantization
    (W = d L + m): equal up to the kernel's bfloat16 output rounding, for 1 and 5 rows."""
    tensor = next(t for t in GGUFReader(tiny_file).tensors if t.name == name)
    blocks = np.asarray(tensor.data)
    weight = dequantize(blocks, GGMLQuantizationType.Q4_1).astype(np.float64)  # [out, in], exact
    out_features, in_features = weight.shape
    groups = blocks.reshape(out_features, in_features // 32, 20)
    d = groups[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float64).repeat(32, axis=1)
    m = groups[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float64).repeat(32, axis=1)
    levels = np.rint((weight - m) / d)
    assert levels.min() >= 0 and levels.max() <= 15
    reference_weight = (levels - 8) * _bf16(d) + _bf16(m + 8 * d)
    layer = Q4_1Linear.from_blocks(blocks)
    for rows in (1, 5):
        x = np.random.default_rng(rows).standard_normal((rows, in_features)).astype(np.float32)
        got = layer(torch.from_numpy(x)).double().numpy()
        expected = _bf16(x) @ reference_weight.T
        bound = BF16_STEP * np.abs(expected) + 1e-5 * (np.abs(_bf16(x)) @ np.abs(reference_weight.T))
        assert np.all(np.abs(got - expected) <= bound), np.max(np.abs(got - expected) - bound)


def test_native_logits_follow_the_float64_dequantized_model(float_and_native):
    """The native p is close to the file's float64 p (bfloat16 products: TV at most 0.024 here) and the
    float64 reference is transformers' own GGUF dequantization (q/k rows permuted back by transformers)."""
    model, native = float_and_native
    reference = AutoModelForCausalLM.from_config(model.config).double().eval()
    reference.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    ids = torch.tensor([[1, 5, 9, 3, 7, 11, 2, 60, 33, 8]])
    p_native = CompactLM(native)
    p_native.prefill(ids[0, :1])
    logits = p_native.grow(ids[0, :-1], torch.arange(-1, ids.shape[1] - 2)).double()
    with torch.no_grad():
        expected = reference(ids).logits[0, :-1]
    tv = 0.5 * (logits.softmax(-1) - expected.softmax(-1)).abs().sum(-1)
    assert float(tv.max()) < 0.05, tv  # measured 0.024; wrong zeros or unpermuted q/k rows give 0.9
    assert torch.equal(logits.argmax(-1), expected.argmax(-1))


def test_shares_the_float_models_tables_and_marks_itself(float_and_native):
    model, native = float_and_native
    assert native.model.embed_tokens.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    assert isinstance(native.model.layers[0].mlp.down_proj, Q4_1Linear)
    assert isinstance(model.model.layers[0].mlp.down_proj, torch.nn.Linear)  # the float32 target untouched
    assert (target_compute_of(native), target_compute_of(model)) == ("native", "float32")
    sampling = Sampling()
    assert calibration_key(native, "int4", "rrs", sampling, 1) != calibration_key(model, "int4", "rrs", sampling, 1)


@pytest.mark.parametrize("head, tolerance", [("float32", 1e-5), ("q8_0", 0.0)])
def test_a_nodes_p_does_not_depend_on_the_row_count(float_and_native, tiny_file, head, tolerance):
    """A chain of 12 nodes after 300 tokens in one forward gives each node the logits of one-row forwards:
    the same bits with the Q8_0 head (every product is the int4 kernel's, row by row), up to the float32
    head's last bits (its MKL buckets) otherwise; batched attention instead differs by ~1e-2 in the hidden
    state here (bfloat16 product inputs turn its last-bit differences into whole bfloat16 steps)."""
    native = native_model(float_and_native[0], tiny_file, head=head)
    assert native.native_head == head
    generator = torch.Generator().manual_seed(0)
    prompt = torch.randint(0, 64, (300,), generator=generator)
    tokens = torch.randint(0, 64, (12,), generator=generator)
    many, one = CompactLM(native), CompactLM(native)
    many.prefill(prompt)
    one.prefill(prompt)
    chain = many.grow(tokens, torch.arange(-1, len(tokens) - 1))
    rows = []
    for token in tokens:
        rows.append(one.grow(token[None], torch.tensor([-1]))[0])
        one.commit(token[None])
    assert torch.allclose(chain, torch.stack(rows), rtol=0, atol=tolerance)


def feature_draft(native, folder) -> FeatureDraft:
    """An untrained feature draft of ``native`` (it reads the glued forward's bfloat16 states)."""
    config = native.config
    path = folder / "feature.safetensors"
    save_draft(FeatureHead(native, torch.arange(0, config.vocab_size, 2), init_layer=None).apply(_normal), dict(
        model_type=config.model_type, hidden_size=config.hidden_size, vocab_size=config.vocab_size), path)
    return FeatureDraft(native, path)


def _normal(module: torch.nn.Module) -> None:
    for parameter in module.parameters(recurse=False):
        torch.nn.init.normal_(parameter, std=0.1, generator=torch.Generator().manual_seed(0))


def test_greedy_speculative_equals_greedy_autoregressive_on_the_native_target(float_and_native, tmp_path):
    model, native = float_and_native
    greedy = Sampling(temperature=0.0)
    prompt = torch.tensor([1, 5, 9, 3])
    plain = list(Decoder(native, None, "ar", sampling=greedy).generate(prompt, 24))
    for verifier, draft, branching in (("sps", TreeLM(model), (1, 1, 1)), ("rrs", CompactLM(model), (2, 2)),
                                       ("rrs", NGramDraft(native.config.vocab_size, 3, 1), (2, 1)),
                                       ("sps", LayerSkipDraft(native, [1]), (1, 1, 1)),
                                       ("rrs", feature_draft(native, tmp_path), (2, 2))):
        decoded = list(Decoder(native, draft, verifier, branching, greedy).generate(prompt, 24))
        assert decoded == plain, (verifier, type(draft).__name__)


def test_the_trained_draft_loads_on_the_native_target_with_the_float_targets_q(float_and_native, tiny_file, tmp_path):
    """Its own layers are float weights loaded from the file, its embedding and head the target's shared tables:
    with the float32 head, on the native target q is the one it has on the float32 target; with the Q8_0 head it
    shares that head (its q then rounds its logits as p does)."""
    from resispec.engine.drafts.trained import DraftLayers, TrainedDraft

    model = float_and_native[0]
    native = native_model(model, tiny_file, head="float32")
    path = tmp_path / "draft.safetensors"
    config = model.config
    save_draft(DraftLayers(model, (1, 0)), dict(model_type=config.model_type, hidden_size=config.hidden_size,
                                                vocab_size=config.vocab_size, init_from=[1, 0]), path)
    sequence = torch.tensor([3, 1, 4, 1, 5])
    on_float, on_native = (TrainedDraft(target, path) for target in (model, native))
    logits = [draft.model(sequence[None]).logits for draft in (on_float, on_native)]
    torch.testing.assert_close(logits[1], logits[0], rtol=0, atol=0)
    q8_0 = native_model(model, tiny_file, head="q8_0")
    assert TrainedDraft(q8_0, path).model.lm_head is q8_0.lm_head


def test_unsupported_quantization_type_is_named_on_one_line(tmp_path):
    path = write_tiny_gguf(tmp_path / "q4_0.gguf", linear_type=GGMLQuantizationType.Q4_0)
    model = AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file=path.name, local_files_only=True,
                                                 dtype=torch.float32)
    with pytest.raises(ValueError) as error:
        native_model(model, path)
    message = str(error.value)
    assert "\n" not in message and "blk.0." in message and "is Q4_0" in message and "Q4_1" in message


@pytest.mark.parametrize("kwargs, message", [
    (dict(compute="int2"), "expected one of"),
    (dict(compute="native", path="/some/folder"), "not a .gguf file"),
    (dict(compute="native", device="meta"), "CPU only"),
    (dict(compute="native", dtype=torch.bfloat16), "does not apply"),
])
def test_impossible_target_computes_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        check_target_compute(**kwargs)


def test_cached_layers_are_reused_and_a_corrupt_cache_is_named_and_rebuilt(float_and_native, tiny_file, capsys):
    model, native = float_and_native
    cache = checkpoint_dir(tiny_file) / f"{CACHE_FORMAT}.safetensors"
    assert cache.is_file()
    again = native_model(model, tiny_file)
    assert torch.equal(again.model.layers[1].mlp.up_proj.levels, native.model.layers[1].mlp.up_proj.levels)
    assert capsys.readouterr().err.count("unusable") == 0
    cache.write_bytes(cache.read_bytes()[:1000])  # truncated
    rebuilt = native_model(model, tiny_file)
    lines = [line for line in capsys.readouterr().err.splitlines() if "unusable" in line]
    assert len(lines) == 1 and str(cache) in lines[0]
    assert torch.equal(rebuilt.model.layers[1].mlp.up_proj.scales_and_zeros,
                       native.model.layers[1].mlp.up_proj.scales_and_zeros)
    assert cache.stat().st_size > 1000  # rewritten whole


def test_float32_compute_is_the_model_itself(float_and_native):
    model, _ = float_and_native
    assert with_compute(model, "float32") is model


@pytest.mark.real_model
@requires_target_wheel
def test_the_real_native_target_holds_the_files_blocks(real_target):
    """Every decoder layer of the shipped file, as the kernel sees it ((L - 8) s + z with bfloat16 s, z),
    equals the float32 target's dequantized weight within the bfloat16 rounding of s and z (q/k rows in
    transformers' order: a wrong permutation or zero is off by whole weights)."""
    model, _ = real_target
    native = with_compute(model, "native")
    for index in (0, 17, 29):
        for block, name in (("self_attn", "q_proj"), ("self_attn", "k_proj"), ("mlp", "down_proj")):
            layer = getattr(getattr(native.model.layers[index], block), name)
            s, z = (layer.scales_and_zeros[..., j].float().T.repeat_interleave(32, dim=1) for j in (0, 1))
            levels = layer.levels.float() - 8
            weight = getattr(getattr(model.model.layers[index], block), name).weight
            bound = 2.0 ** -8 * (levels.abs() * s.abs() + z.abs()) + 1e-7
            assert bool(((levels * s + z - weight).abs() <= bound).all()), (index, name)


def test_the_q8_0_head_computes_the_files_levels_with_bfloat16_scales(tiny_file):
    """y = x_bf16 (bf16(d) q)^T from the file's own Q8_0 blocks (gguf's dequantization is d q): equal up to the
    kernel's bfloat16 output rounding, for 1 and 5 rows, each row the same bits as alone."""
    tensor = next(t for t in GGUFReader(tiny_file).tensors if t.name == "token_embd.weight")
    blocks = np.asarray(tensor.data)
    q, d = Q8_0Linear.split_blocks(blocks)
    weight = dequantize(blocks, GGMLQuantizationType.Q8_0).astype(np.float64)
    np.testing.assert_array_equal(q.double().numpy() * d.double().numpy().repeat(32, axis=1), weight)
    head = Q8_0Linear.from_levels(q, d)
    assert (head.in_features, head.out_features) == (weight.shape[1], weight.shape[0])
    reference_weight = q.double().numpy() * _bf16(d.numpy()).repeat(32, axis=1)
    x = np.random.default_rng(7).standard_normal((5, weight.shape[1])).astype(np.float32)
    got = head(torch.from_numpy(x))
    assert got.dtype == torch.float32
    expected = _bf16(x) @ reference_weight.T
    bound = BF16_STEP * np.abs(expected) + 1e-5 * (np.abs(_bf16(x)) @ np.abs(reference_weight.T))
    assert np.all(np.abs(got.double().numpy() - expected) <= bound), np.max(np.abs(got.double().numpy() - expected))
    assert torch.equal(torch.cat([head(torch.from_numpy(x[i: i + 1])) for i in range(5)]), got)


def test_the_head_is_chosen_by_the_cpu_or_by_name_and_keys_the_calibration(float_and_native, tiny_file):
    model, native = float_and_native
    assert native.native_head == native_head_for_this_cpu()
    q8_0, float32 = (native_model(model, tiny_file, head=head) for head in ("q8_0", "float32"))
    assert isinstance(q8_0.lm_head, Q8_0Linear) and q8_0.model.embed_tokens.weight is model.model.embed_tokens.weight
    assert float32.lm_head.weight is model.lm_head.weight
    assert "head q8_0" in describe_native(q8_0) and "head float32" in describe_native(float32)
    sampling = Sampling()
    assert calibration_key(q8_0, "ngram", "rrs", sampling, 1) != calibration_key(float32, "ngram", "rrs", sampling, 1)
    with pytest.raises(ValueError, match="native head: expected one of q8_0, float32"):
        native_model(model, tiny_file, head="int8")


def test_the_native_forward_runs_the_row_kernels_and_follows_the_torch_forward(float_and_native):
    """The native target's forward runs `resispec.engine.model.row_glue` between its products (the float32 target does
    not); its logits stay within bfloat16 rounding of the same layers in torch operations (a 6-node tree after
    40 tokens: the same bits on this tiny model)."""
    float_model, native = float_and_native
    glued = CompactLM(native)
    in_torch = CompactLM(native)
    in_torch.weights = copy.copy(glued.weights)
    in_torch.weights.glued = False
    assert glued.weights.glued and not CompactLM(float_model).weights.glued
    generator = torch.Generator().manual_seed(5)
    prompt, tokens = torch.randint(0, 64, (40,), generator=generator), torch.randint(0, 64, (6,), generator=generator)
    logits = []
    for lm in (glued, in_torch):
        lm.prefill(prompt)
        logits.append(lm.grow(tokens, torch.tensor([-1, 0, 0, 1, 1, 2])))
    assert torch.allclose(*logits, rtol=0, atol=0.05)  # the same here; logits spread ~2, max ~6
