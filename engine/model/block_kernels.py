"""Which kernel multiplies the file's blocks at decode time, and the AVX2 one of this project (``avx2_blocks.c``).

torch's int4 kernel (``_weight_int4pack_mm_for_cpu``, `resispec.engine.model.quantize.Int4Linear`) is fast where torch
runs its AVX-512 code and about half as fast on AVX2-only CPUs (AMD EPYCs of this project's machines; emulated on a
Xeon with ``ATEN_CPU_CAPABILITY=avx2``): docs/avx2_kernels.md has the measurements. ``avx2_blocks.c`` holds two
products written here with AVX2 + FMA intrinsics, for the few rows of a decode round:

- **Q4_1 layers** (a block: 32 consecutive inputs of one output row, levels ``L`` in 0..15, value ``d L + m``; held
  as torch's bfloat16 scale ``s = d`` and zero ``z = m + 8 d``, so ``(L - 8) s + z``):
  ``y[r, o] = sum_b ( s_ob sum_j x[r, 32 b + j] L[o, 32 b + j] + (z_ob - 8 s_ob) sum_j x[r, 32 b + j] )``,
  x bfloat16 [rows, in]; each block of a row as int16 ``xq`` times a power of two ``2^(E - 13)`` (E: the exponent
  of the block's largest |x|; exact within 2^6 of it, else off by at most 2^-15 of it), the block's
  ``sum_j xq_j L_j`` exact in int32, times ``s_ob 2^(E - 13)`` and accumulated in float32 by lane, the lanes summed,
  the zero term (float32 block sums of x) added; y rounded to bfloat16 [rows, out] (what torch's kernel returns).
  Weights: levels packed two a byte in the file's order (byte j of a block: ``L_j`` low, ``L_16+j`` high),
  [out, in / 2] uint8, and ``s``, ``z`` bfloat16 [out, in / 32]: 0.625 bytes a weight, as torch's.
- **The Q8_0 head** (32 int8 levels ``q`` and a scale ``d`` a block, ``d q``; ``d`` in bfloat16 as in the two-plane
  head of `resispec.engine.model.native`): ``y[r, o] = sum_b d_ob sum_j x[r, 32 b + j] q[o, 32 b + j]``, x as
  above, float32 logits [rows, out] (the two-plane head rounds them to bfloat16).

Each row of x goes through the same operations in the same order whatever the other rows are (up to four rows share
one decoding of a block's weights), so a node's p does not depend on the row count of the forward that computes it.

Which kernel runs (`block_kernels`, asked when a layer's product is bound, i.e. when a forward's weights are
prepared): ``RESISPEC_BLOCK_KERNELS`` = ``torch``, ``avx2`` or ``auto`` (the default: module constant ``AUTO``).
The extension is compiled at first use with the system C compiler, ``-O2 -mavx2 -mfma`` only (a true AVX2
path, no AVX-512 instruction whatever the build machine has), and cached under ``<cache root>/kernels`` with its
digest like the row kernels (`resispec.engine.model.row_kernels.cached_extension`); on a CPU without AVX2 and FMA,
or where it cannot be built (the reason on one line), torch's kernel runs: the portable path.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import ModuleType

import torch

from resispec.engine.model.gguf import cache_root
from resispec.engine.model.isa import cpu_flags
from resispec.engine.model.row_kernels import cached_extension, install_built

SOURCE = Path(__file__).with_name("avx2_blocks.c")
ENVIRONMENT = "RESISPEC_BLOCK_KERNELS"
CHOICES = ("auto", "torch", "avx2")
NEEDED_FLAGS = ("avx2", "fma")
AUTO = "avx2"
"""What ``auto`` picks on a CPU with AVX2 and FMA where torch runs no AVX-512 code, with torch on one thread
(``torch`` everywhere else): the kernels here beat torch's AVX2 ones (docs/avx2_kernels.md); they run on one thread,
where torch's parallelize over output rows; under AVX-512 torch's are about as fast."""
GROUP = 32
Product = Callable[[torch.Tensor], torch.Tensor]


def block_kernels() -> str:
    """``avx2`` or ``torch``: the kernel that multiplies the file's blocks in this process (module docstring).
    ``ValueError`` (one line) for another value of ``RESISPEC_BLOCK_KERNELS`` or ``avx2`` on a CPU without it."""
    wanted = os.environ.get(ENVIRONMENT, "auto")
    if wanted not in CHOICES:
        raise ValueError(f"{ENVIRONMENT}: expected one of {', '.join(CHOICES)}, got {wanted!r}")
    missing = _missing_flags()
    if wanted == "avx2" and missing:
        raise ValueError(f"{ENVIRONMENT}=avx2: this CPU lacks {', '.join(missing)}")
    if wanted == "auto":
        avx2_only = not missing and not torch.backends.cpu.get_cpu_capability().startswith("AVX512")
        wanted = AUTO if avx2_only and torch.get_num_threads() == 1 else "torch"
    return wanted if wanted == "torch" or avx2_module() is not None else "torch"


@cache
def _missing_flags() -> list[str]:
    return [flag for flag in NEEDED_FLAGS if flag not in cpu_flags()]


def module_name() -> str:
    """The compiled module's name: ``avx2_blocks_`` and a fingerprint of its source, Python and the machine."""
    parts = [SOURCE.read_bytes(), sys.version.encode(), platform.machine().encode()]
    return "avx2_blocks_" + hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]


@cache
def avx2_module() -> ModuleType | None:
    """The compiled AVX2 kernels (cached in ``<cache root>/kernels``, built there first), or None where building
    fails (the reason on stderr, once)."""
    name = module_name()
    path = cache_root() / "kernels" / f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    try:
        return cached_extension(name, path, lambda: _build(name, path), "AVX2 block kernels",
                                f"compiling the AVX2 block kernels (once, ~2 s; cached in {path})", cache_root())
    except (OSError, subprocess.CalledProcessError, ImportError) as error:
        print(f"resispec: could not compile the AVX2 block kernels ({type(error).__name__}: {error}); torch's int4 "
              "kernel runs instead", file=sys.stderr)
        return None


def _build(name: str, path: Path) -> None:
    """Compile ``SOURCE`` into the extension module ``path`` (``-O2 -mavx2 -mfma``; module docstring)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    compiler = os.environ.get("CC", "cc")
    with tempfile.TemporaryDirectory(dir=path.parent) as folder:
        built = Path(folder) / path.name
        subprocess.run([compiler, "-O2", "-mavx2", "-mfma", "-shared", "-fPIC",
                        f"-I{sysconfig.get_paths()['include']}", f"-DMODULE_NAME={name}",
                        f'-DMODULE_NAME_STRING="{name}"', str(SOURCE), "-o", str(built)],
                       check=True, capture_output=True, text=True)
        install_built(built, path)


def _bf16_bits(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.to(torch.bfloat16).contiguous().view(torch.int16)


def _bf16_rows(rows: torch.Tensor, in_features: int) -> torch.Tensor:
    """``rows`` as the kernels read them (contiguous bfloat16 [rows, in_features]); ``TypeError`` otherwise."""
    if rows.dtype != torch.bfloat16 or rows.dim() != 2 or rows.shape[1] != in_features:
        raise TypeError(f"AVX2 block kernels: expected bfloat16 rows [n, {in_features}], got {rows.dtype} "
                        f"{list(rows.shape)}")
    return rows.contiguous()


def q4_1_product(levels: torch.Tensor, scales_and_zeros: torch.Tensor) -> Product:
    """The AVX2 product of a Q4_1 layer: bfloat16 [rows, in] -> bfloat16 [rows, out], from its levels (uint8
    [out, in], 0..15) and torch's scales and zeros (bfloat16 [in / 32, out, 2]; module docstring)."""
    kernels = avx2_module()
    out_features, in_features = levels.shape
    blocks = levels.reshape(out_features, in_features // GROUP, 2, GROUP // 2).to(torch.uint8)
    packed = (blocks[:, :, 0] | blocks[:, :, 1] << 4).reshape(out_features, in_features // 2).contiguous()
    scales, zeros = (_bf16_bits(scales_and_zeros[..., i].transpose(0, 1)) for i in (0, 1))
    return _bound(kernels.q4_1_mm, (packed, scales, zeros), in_features, out_features, torch.bfloat16)


def q8_0_product(q: torch.Tensor, d: torch.Tensor) -> Product:
    """The AVX2 product of a Q8_0 table: bfloat16 [rows, in] -> float32 [rows, out], from its levels ``q`` (int8
    [out, in]) and block scales ``d`` ([out, in / 32], used in bfloat16; module docstring)."""
    kernels = avx2_module()
    out_features, in_features = q.shape
    levels, scales = q.to(torch.int8).contiguous(), _bf16_bits(d)
    return _bound(kernels.q8_0_mm, (levels, scales), in_features, out_features, torch.float32)


def _bound(kernel, weights: tuple[torch.Tensor, ...], in_features: int, out_features: int,
           out_dtype: torch.dtype) -> Product:
    """``kernel(rows, n, in, out, *weight pointers, out)`` as a product of bfloat16 rows [n, in] -> ``out_dtype``
    [n, out]; the closure holds ``weights``, so their pointers stay valid."""
    pointers = tuple(weight.data_ptr() for weight in weights)

    def product(rows: torch.Tensor, keep=weights) -> torch.Tensor:
        rows = _bf16_rows(rows, in_features)
        out = torch.empty(rows.shape[0], out_features, dtype=out_dtype)
        kernel(rows.data_ptr(), rows.shape[0], in_features, out_features, *pointers, out.data_ptr())
        return out

    return product
