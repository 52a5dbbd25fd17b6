"""The one-line CPU description beside every speed figure (`resispec.engine.runtime.machine`)."""

from resispec.engine.runtime.machine import cpu_description


def test_names_the_model_and_the_extensions_the_kernels_use(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu avx2 fma avx512f avx512_vnni\n\n"
                       "processor\t: 1\nmodel name\t: Other\nflags\t\t: amx_int8\n")
    assert cpu_description(cpuinfo) == "Some CPU; AVX2, FMA, AVX-512F, AVX-512 VNNI"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Old CPU\nflags\t\t: fpu sse2\n")
    assert cpu_description(cpuinfo).startswith("Old CPU; none of AVX2, FMA")


def test_falls_back_to_the_platform_without_proc(tmp_path):
    assert cpu_description(tmp_path / "missing")
