"""The native forward's row kernels (`resispec.engine.model.row_glue`) against the torch operations they replace, and
their ahead-of-time build (`resispec.engine.model.row_kernels`) against the JIT functions."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.nn import functional

from resispec.engine.model import row_glue, row_kernels
from resispec.engine.model.row_kernels import bits, load_row_kernels
from resispec.engine.runtime.compact_lm import rotate, signed_sin

HIDDEN, HEADS, KV_HEADS, DIM = 96, 3, 1, 32


def bf16_steps_apart(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """How many bfloat16 values lie between a and b (same-sign finite entries)."""
    return (a.view(torch.int16).int() - b.view(torch.int16).int()).abs()


def test_narrow_and_widen_are_torchs_bfloat16_casts():
    generator = torch.Generator().manual_seed(0)
    values = torch.cat([torch.randn(4000, generator=generator) * 10.0 ** torch.randint(-30, 30, (4000,)),
                        torch.tensor([0.0, -0.0, float("inf"), -float("inf"), 3.0e38, 1e-40, -1e-45]),
                        (torch.arange(-64, 64, dtype=torch.bfloat16).float() + 2.0 ** -8)])  # ties at 1 +- 2^-8
    narrowed = torch.empty(len(values), dtype=torch.bfloat16)
    row_glue._narrow(values.numpy(), bits(narrowed))
    assert torch.equal(narrowed.view(torch.int16), values.to(torch.bfloat16).view(torch.int16))
    widened = torch.empty(len(values))
    row_glue._widen(bits(narrowed), widened.numpy())
    assert torch.equal(widened, narrowed.float())
    nan = torch.empty(1, dtype=torch.bfloat16)
    row_glue._narrow(np.array([np.nan], np.float32), bits(nan))
    assert nan.isnan().all()


def test_add_norm_is_the_residual_add_then_rms_norm_then_the_cast():
    generator = torch.Generator().manual_seed(1)
    h = torch.randn(5, HIDDEN, generator=generator) * 3
    delta = torch.randn(5, HIDDEN, generator=generator).to(torch.bfloat16)
    weight = torch.rand(HIDDEN, generator=generator) + 0.5
    expected_h = h + delta
    expected = functional.rms_norm(expected_h, (HIDDEN,), weight, 1e-5)
    out, out32 = torch.empty(5, HIDDEN, dtype=torch.bfloat16), torch.empty(5, HIDDEN)
    h_32 = h.clone()
    row_glue.add_norm_rows(h.numpy(), bits(delta), weight.numpy(), 1e-5, bits(out))
    row_glue.add_norm_rows_f32(h_32.numpy(), bits(delta), weight.numpy(), 1e-5, out32.numpy())
    assert torch.equal(h, expected_h) and torch.equal(h_32, expected_h)
    assert torch.allclose(out32, expected, rtol=1e-6, atol=0)  # the float32 sum's order alone differs
    assert bf16_steps_apart(out, expected.to(torch.bfloat16)).max() <= 1
    assert (out == expected.to(torch.bfloat16)).float().mean() > 0.99


def test_rotate_store_is_the_rotary_of_compact_lm_and_the_cache_write():
    generator = torch.Generator().manual_seed(2)
    rows, start = 3, 5
    qkv = torch.randn(rows, (HEADS + 2 * KV_HEADS) * DIM, generator=generator).to(torch.bfloat16)
    angles = torch.rand(rows, DIM // 2, generator=generator) * 6
    cos, sin = torch.cat([angles.cos()] * 2, dim=-1), torch.cat([angles.sin()] * 2, dim=-1)
    queries = torch.empty(HEADS, rows, DIM)
    keys, values = torch.zeros(KV_HEADS, 16, DIM), torch.zeros(KV_HEADS, 16, DIM)
    row_glue.rotate_store_rows(bits(qkv), cos.numpy(), signed_sin(sin).numpy(), HEADS, queries.numpy(),
                               keys.numpy(), values.numpy(), start)
    heads = qkv.view(rows, HEADS + 2 * KV_HEADS, DIM).transpose(0, 1)
    rotated = rotate(heads[: HEADS + KV_HEADS], cos, signed_sin(sin))
    assert torch.equal(queries, rotated[:HEADS])
    assert torch.equal(keys[:, start: start + rows], rotated[HEADS:])
    assert torch.equal(values[:, start: start + rows], heads[HEADS + KV_HEADS:].float())
    assert not keys[:, :start].any() and not keys[:, start + rows:].any()


def test_heads_to_rows_and_swiglu_are_the_torch_operations():
    generator = torch.Generator().manual_seed(3)
    attended = torch.randn(4, HEADS, DIM, generator=generator).transpose(0, 1)  # a strided view, as from attention
    out = torch.empty(4, HEADS * DIM, dtype=torch.bfloat16)
    row_glue.heads_to_rows(attended.numpy(), bits(out))
    assert torch.equal(out, attended.transpose(0, 1).reshape(4, -1).to(torch.bfloat16))
    gate_up = (torch.randn(4, 2 * HIDDEN, generator=generator) * 4).to(torch.bfloat16)
    hidden = torch.empty(4, HIDDEN, dtype=torch.bfloat16)
    row_glue.swiglu_rows(bits(gate_up), bits(hidden))
    gate, up = gate_up.chunk(2, dim=-1)
    expected = functional.silu(gate) * up
    assert bf16_steps_apart(hidden, expected).max() <= 1 and (hidden == expected).float().mean() > 0.99


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kernels")
    return folder, load_row_kernels(folder)


def test_the_compiled_kernels_are_the_jit_kernels_bit_for_bit(compiled):
    folder, kernels = compiled
    assert kernels is not row_glue and kernels.__file__.startswith(str(folder))
    generator = torch.Generator().manual_seed(4)
    h = torch.randn(3, HIDDEN, generator=generator)
    delta = torch.randn(3, HIDDEN, generator=generator).to(torch.bfloat16)
    weight = torch.rand(HIDDEN, generator=generator)
    gate_up = torch.randn(3, 2 * HIDDEN, generator=generator).to(torch.bfloat16)
    results = []
    for module in (kernels, row_glue):
        h_copy, out, hidden = h.clone(), torch.empty(3, HIDDEN, dtype=torch.bfloat16), torch.empty(3, HIDDEN,
                                                                                                     dtype=torch.bfloat16)
        module.add_norm_rows(h_copy.numpy(), bits(delta), weight.numpy(), 1e-5, bits(out))
        module.swiglu_rows(bits(gate_up), bits(hidden))
        results.append((h_copy, out, hidden))
    assert all(torch.equal(a, b) for a, b in zip(*results))


def test_the_compiled_module_is_reused_and_a_corrupt_one_is_named_and_rebuilt(compiled, tmp_path, capsys):
    folder, kernels = compiled
    assert load_row_kernels(folder).__file__ == kernels.__file__
    assert "compiling" not in capsys.readouterr().err
    corrupt = tmp_path / next(folder.glob("row_glue_*.so")).name  # another folder: the loaded file stays mapped
    corrupt.write_bytes(b"not an extension module")
    rebuilt = load_row_kernels(tmp_path)
    err = capsys.readouterr().err
    assert "unusable (no digest recorded when it was built); rebuilding" in err
    assert rebuilt is not row_glue and corrupt.stat().st_size > 1000


def _copy_of_the_build(compiled, into):
    """Stand-in for ``_build``: the fixture's compiled file and its digest record copied into ``into``."""
    folder, _ = compiled
    for source in folder.glob("row_glue_*"):
        (into / source.name).write_bytes(source.read_bytes())


def test_a_cut_extension_is_never_imported_and_is_rebuilt(compiled, tmp_path, monkeypatch, capsys):
    _copy_of_the_build(compiled, tmp_path)
    module = next(tmp_path.glob("row_glue_*.so"))
    size = module.stat().st_size
    module.write_bytes(module.read_bytes()[: size // 2])  # cut inside its code: importing it died of SIGBUS
    loaded = []
    monkeypatch.setattr(row_kernels, "_load", lambda name, path: loaded.append(path.stat().st_size) or row_glue)
    monkeypatch.setattr(row_kernels, "_build", lambda name, path: _copy_of_the_build(compiled, tmp_path))
    load_row_kernels(tmp_path)
    assert f"unusable ({size // 2} bytes where {size} were built); rebuilding" in capsys.readouterr().err
    assert loaded == [size]  # only the rebuilt, whole file was imported


@pytest.mark.parametrize("where", ["root", "folder", "file"])
def test_a_cache_others_can_write_is_refused_with_how_to_fix_it(compiled, tmp_path, monkeypatch, where):
    folder = tmp_path / "kernels"
    folder.mkdir()
    _copy_of_the_build(compiled, folder)
    module = next(folder.glob("row_glue_*.so"))
    target = {"root": tmp_path, "folder": folder, "file": module}[where]
    target.chmod(target.stat().st_mode | 0o022)
    monkeypatch.setattr(row_kernels, "_load", lambda name, path: pytest.fail("loaded from an untrusted cache"))
    with pytest.raises(ValueError, match=rf"^cache: {target} is writable by others .*chmod go-w {target}"):
        load_row_kernels(folder, trusted_root=tmp_path)


def test_a_failed_build_says_so_and_falls_back_to_the_jit_kernels(tmp_path, monkeypatch, capsys):
    def no_compiler(name, path):
        raise RuntimeError("no C compiler")

    monkeypatch.setattr(row_kernels, "_build", no_compiler)
    assert load_row_kernels(tmp_path) is row_glue
    assert "could not compile the row kernels ahead of time (RuntimeError: no C compiler)" in capsys.readouterr().err
