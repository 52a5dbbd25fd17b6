"""The AVX2 block kernels (`resispec.engine.model.block_kernels`): parity with a float64 reference and torch's int4
kernel, bit-level where the sums are exact, rows independent of the row count, the choice of kernel, the fallback,
and the native target on them (tiny file; the real model's greedy tokens)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import torch

from resispec.engine.decode.decoding import AUTOREGRESSIVE, Decoder
from resispec.engine.decode.processing import Sampling
from resispec.engine.model import block_kernels as kernels
from resispec.engine.model.block_kernels import ENVIRONMENT, block_kernels, q4_1_product, q8_0_product
from resispec.engine.model.native import Q8_0Linear, describe_native, native_head_for_this_cpu, native_model
from resispec.engine.model.quantize import INT4_GROUP, Int4Linear
from resispec.engine.runtime.compact_lm import CompactLM
from tests.engine.model.test_models import requires_target_wheel
from tests.engine.model.test_native import float_and_native, own_cache, tiny_file  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(kernels.avx2_module() is None or kernels._missing_flags(),
                                reason="no AVX2 / FMA here, or no C compiler")
BF16_STEP = 2.0 ** -8
"""Bound on bfloat16's rounding relative to the value (half a step of its binade: 2^-9 to 2^-8 of it)."""
X_ROUNDING = 2.0 ** -13
"""Bound on the x quantization's error relative to sum_j |x_j w_j| (each x_j off by at most 2^-15 of its block's
largest; with 32 of them against the largest |w|, 2^-10 in the worst case; 2^-13 holds on Gaussian rows)."""


def _layer(out_features: int, in_features: int, seed: int) -> Int4Linear:
    generator = torch.Generator().manual_seed(seed)
    linear = torch.nn.Linear(in_features, out_features, bias=False)
    torch.nn.init.normal_(linear.weight, generator=generator)
    return Int4Linear.from_linear(linear)


def _weights(layer: Int4Linear) -> torch.Tensor:
    """The layer's weights in float64: (L - 8) s + z with its bfloat16 s, z."""
    s, z = (layer.scales_and_zeros[..., i].double().T.repeat_interleave(INT4_GROUP, dim=1) for i in (0, 1))
    return (layer.levels.double() - 8) * s + z


def _rows(count: int, width: int, seed: int) -> torch.Tensor:
    return torch.randn(count, width, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)


@pytest.mark.parametrize("shape", [(960, 576), (64, 1536), (48, 32)])
def test_q4_1_products_follow_the_float64_reference_as_torchs_kernel_does(shape):
    """|y - x W^T| <= 2^-8 |x W^T| (the output's bfloat16 rounding) + 2^-13 sum |x w| (x's quantization and float32
    sums); torch's kernel meets the same bound, and the two differ by at most twice it."""
    layer = _layer(*shape, seed=1)
    ours, theirs = q4_1_product(layer.levels, layer.scales_and_zeros), layer.bound_product()
    for count in (1, 3, 8):
        x = _rows(count, shape[1], seed=count)
        expected = x.double() @ _weights(layer).T
        bound = BF16_STEP * expected.abs() + X_ROUNDING * (x.double().abs() @ _weights(layer).abs().T)
        got, torch_got = ours(x), theirs(x)
        assert got.dtype == torch.bfloat16 and got.shape == (count, shape[0])
        assert torch.all((got.double() - expected).abs() <= bound), (got.double() - expected).abs().max()
        assert torch.all((torch_got.double() - expected).abs() <= bound)
        assert torch.all((got.double() - torch_got.double()).abs() <= 2 * bound)


def test_rows_of_another_dtype_or_width_are_refused():
    layer = _layer(16, 64, seed=2)
    product = q4_1_product(layer.levels, layer.scales_and_zeros)
    with pytest.raises(TypeError, match=r"expected bfloat16 rows \[n, 64\], got torch.float32 \[1, 64\]"):
        product(torch.zeros(1, 64))
    with pytest.raises(TypeError, match=r"got torch.bfloat16 \[1, 32\]"):
        product(torch.zeros(1, 32, dtype=torch.bfloat16))
    assert product(torch.zeros(0, 64, dtype=torch.bfloat16)).shape == (0, 16)


def test_exact_sums_give_torchs_bits():
    """Integer rows against s = 1, z = 8 (w = L): every sum is an exact integer in both kernels, rounded once to
    bfloat16, so the bits are torch's."""
    generator = torch.Generator().manual_seed(3)
    levels = torch.randint(0, 16, (96, 576), generator=generator, dtype=torch.uint8)
    scales_and_zeros = torch.stack([torch.ones(18, 96), torch.full((18, 96), 8.0)], dim=-1).to(torch.bfloat16)
    layer = Int4Linear(levels, scales_and_zeros)
    x = torch.randint(-100, 101, (5, 576), generator=generator).to(torch.bfloat16)
    got = q4_1_product(levels, scales_and_zeros)(x)
    assert torch.equal(got, layer.bound_product()(x))
    assert torch.equal(got, (x.double() @ levels.double().T).to(torch.bfloat16))


def test_the_q8_0_head_follows_the_float64_reference_closer_than_the_two_plane_head(monkeypatch):
    """Float32 logits: within 2^-13 sum |x w| of x (bf16(d) q)^T, where the two-plane head's bfloat16 logits are
    off by up to half a bfloat16 step (more than 10 times as far here)."""
    monkeypatch.setenv(ENVIRONMENT, "torch")
    generator = torch.Generator().manual_seed(4)
    q = torch.randint(-128, 128, (512, 576), generator=generator, dtype=torch.int8)
    d = torch.rand(512, 18, generator=generator) * 0.01
    x = _rows(3, 576, seed=5)
    weight = q.double() * d.to(torch.bfloat16).double().repeat_interleave(32, dim=1)
    expected = x.double() @ weight.T
    got = q8_0_product(q, d)(x)
    assert got.dtype == torch.float32
    error = (got.double() - expected).abs()
    assert torch.all(error <= X_ROUNDING * (x.double().abs() @ weight.abs().T))
    head = Q8_0Linear.from_levels(q, d)
    two_plane = (head.bound_product()(x).double() - expected).abs()
    assert two_plane.max() > 10 * error.max()
    monkeypatch.setenv(ENVIRONMENT, "avx2")  # the module's levels ([l | h + 8]) give back the file's q
    assert torch.equal(head.bound_product()(x), got)


@pytest.mark.parametrize("product", ["q4_1", "q8_0"])
def test_a_rows_bits_do_not_depend_on_the_other_rows(product):
    """Each of 9 rows (groups of 4, 4, 1 inside the kernel) has the bits it has alone or among 2 or 6 rows."""
    layer = _layer(80, 576, seed=6)
    call = (q4_1_product(layer.levels, layer.scales_and_zeros) if product == "q4_1"
            else q8_0_product(layer.levels.to(torch.int8) - 8, torch.rand(80, 18) * 0.01))
    x = _rows(9, 576, seed=7)
    together = call(x)
    for start, stop in ((0, 1), (3, 5), (2, 8), (8, 9)):
        assert torch.equal(call(x[start:stop]), together[start:stop])


@pytest.mark.skipif(shutil.which("objdump") is None, reason="no objdump")
def test_the_compiled_module_holds_no_avx_512_instruction():
    """Built for AVX2 + FMA only: 256-bit ymm registers, no zmm register nor mask register (AVX-512's)."""
    code = subprocess.run(["objdump", "-d", kernels.avx2_module().__file__], capture_output=True, text=True,
                          check=True).stdout
    assert "ymm" in code and "vpmaddwd" in code
    assert not re.search(r"zmm|%k[0-7]\b", code)


def test_the_kernel_is_chosen_by_the_cpu_and_forced_by_the_environment(monkeypatch):
    monkeypatch.setenv(ENVIRONMENT, "torch")
    assert block_kernels() == "torch"
    monkeypatch.setenv(ENVIRONMENT, "avx2")
    assert block_kernels() == "avx2"
    monkeypatch.setenv(ENVIRONMENT, "auto")
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    assert block_kernels() == "torch"
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    assert block_kernels() == kernels.AUTO == "avx2"
    assert native_head_for_this_cpu() == "q8_0"
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    assert block_kernels() == "torch"  # the kernels run on one thread, torch's on all
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    monkeypatch.setattr(kernels, "_missing_flags", lambda: ["avx2", "fma"])
    assert block_kernels() == "torch"
    monkeypatch.setenv(ENVIRONMENT, "avx2")
    with pytest.raises(ValueError, match=f"^{ENVIRONMENT}=avx2: this CPU lacks avx2, fma$"):
        block_kernels()
    monkeypatch.setenv(ENVIRONMENT, "avx512")
    with pytest.raises(ValueError, match=f"^{ENVIRONMENT}: expected one of auto, torch, avx2, got 'avx512'$"):
        block_kernels()


def test_a_failed_build_says_so_once_and_leaves_torchs_kernel(tmp_path, monkeypatch, capsys):
    def no_compiler(name, path):
        raise subprocess.CalledProcessError(1, ["cc"], stderr="cc: not found")

    monkeypatch.setenv("RESISPEC_CACHE", str(tmp_path))
    monkeypatch.setattr(kernels, "_build", no_compiler)
    monkeypatch.setattr(kernels, "avx2_module", kernels.avx2_module.__wrapped__)
    monkeypatch.setenv(ENVIRONMENT, "avx2")
    assert block_kernels() == "torch"
    assert "could not compile the AVX2 block kernels (CalledProcessError" in capsys.readouterr().err


def test_the_compiled_module_is_built_once_and_reused(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RESISPEC_CACHE", str(tmp_path))
    first = kernels.avx2_module.__wrapped__()
    assert "compiling the AVX2 block kernels" in capsys.readouterr().err
    again = kernels.avx2_module.__wrapped__()
    assert again.__file__ == first.__file__ and "compiling" not in capsys.readouterr().err


def test_the_native_target_on_the_avx2_kernels(float_and_native, tiny_file, monkeypatch):  # noqa: F811
    """On the tiny file: p within TV 0.05 of the p of torch's kernels (a one-ulp bfloat16 difference in a product
    grows through the random layers; logits spread ~2, up to 0.2 apart), a chain's nodes the bits of one-row
    forwards, greedy speculative = greedy autoregressive, and the report says which kernels ran."""
    model, _ = float_and_native
    monkeypatch.setenv(ENVIRONMENT, "torch")
    reference = CompactLM(native_model(model, tiny_file, head="q8_0"))
    monkeypatch.setenv(ENVIRONMENT, "avx2")
    ours = native_model(model, tiny_file, head="q8_0")
    assert "block kernels avx2" in describe_native(ours)
    generator = torch.Generator().manual_seed(8)
    prompt, tokens = torch.randint(0, 64, (60,), generator=generator), torch.randint(0, 64, (8,), generator=generator)
    logits = []
    for lm in (reference, CompactLM(ours)):
        lm.prefill(prompt)
        logits.append(lm.grow(tokens, torch.arange(-1, len(tokens) - 1)))
    tv = 0.5 * (logits[0].softmax(-1) - logits[1].softmax(-1)).abs().sum(-1)
    assert float(tv.max()) < 0.05, tv  # 0.019 here; as close as the native p is to the float64 p (test_native)
    many, one = CompactLM(ours), CompactLM(ours)
    many.prefill(prompt)
    one.prefill(prompt)
    rows = []
    for token in tokens:
        rows.append(one.grow(token[None], torch.tensor([-1]))[0])
        one.commit(token[None])
    assert torch.equal(logits[1], torch.stack(rows))
    greedy = Sampling(temperature=0.0)
    plain = list(Decoder(ours, None, AUTOREGRESSIVE, sampling=greedy).generate(prompt[:8], 24))
    assert list(Decoder(ours, CompactLM(model), "rrs", (2, 2), sampling=greedy).generate(prompt[:8], 24)) == plain


@pytest.mark.real_model
@requires_target_wheel
def test_greedy_tokens_of_the_real_target_are_torchs(real_target, monkeypatch):
    """The shipped file, a short chat prompt, 24 greedy tokens: the same with the AVX2 kernels as with torch's."""
    from resispec.engine.decode.generation import prompt_ids
    from resispec.engine.model.models import with_compute

    model, tokenizer = real_target
    ids = torch.as_tensor(prompt_ids(tokenizer, "Name three colours of the rainbow.", True))
    tokens = {}
    for choice in ("torch", "avx2"):
        monkeypatch.setenv(ENVIRONMENT, choice)
        native = with_compute(model, "native")
        decoder = Decoder(native, None, AUTOREGRESSIVE, sampling=Sampling(temperature=0.0))
        tokens[choice] = list(decoder.generate(ids, 24, tokenizer.eos_token_id))
    assert tokens["avx2"] == tokens["torch"] and len(tokens["torch"]) > 4
