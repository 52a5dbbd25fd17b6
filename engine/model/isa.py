"""What this CPU's instruction set has, read from ``/proc/cpuinfo`` (its first processor's ``flags``)."""

from __future__ import annotations

from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


def cpuinfo_fields(cpuinfo: Path = CPUINFO) -> dict[str, str] | None:
    """``key: value`` lines of the first processor in ``cpuinfo`` (None where that file cannot be read)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in text.split("\n\n")[0].splitlines() if ":" in line)
    return {key.strip(): value.strip() for key, value in fields.items()}


def cpu_flags(cpuinfo: Path = CPUINFO) -> set[str]:
    """The first processor's flags (``avx2``, ``fma``, ``avx512f``, ...; empty where ``cpuinfo`` cannot be read)."""
    return set((cpuinfo_fields(cpuinfo) or {}).get("flags", "").split())
