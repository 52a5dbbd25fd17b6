"""The CPU a benchmark ran on, in one line: its model name and the vector extensions speed depends on."""

from __future__ import annotations

import platform
from pathlib import Path

from resispec.engine.model.isa import cpuinfo_fields

ISA_FLAGS = {"avx2": "AVX2", "fma": "FMA", "avx512f": "AVX-512F", "avx512_bf16": "AVX-512 BF16",
             "avx512_vnni": "AVX-512 VNNI", "avx_vnni": "AVX-VNNI", "amx_bf16": "AMX-BF16", "amx_int8": "AMX-INT8"}
"""``/proc/cpuinfo`` flag -> how a report names it (the extensions the int4 / bfloat16 / int8 kernels use)."""


def cpu_description(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """``<model name>; <extensions it has>`` (``none of ...`` when it has none of ``ISA_FLAGS``), from
    ``cpuinfo``'s first processor; the platform's processor string where that file does not exist."""
    fields = cpuinfo_fields(cpuinfo)
    if fields is None:
        return platform.processor() or platform.machine() or "unknown CPU"
    flags = set(fields.get("flags", "").split())
    found = [name for flag, name in ISA_FLAGS.items() if flag in flags]
    extensions = ", ".join(found) or "none of " + ", ".join(ISA_FLAGS.values())
    return f"{fields.get('model name', platform.machine())}; {extensions}"
