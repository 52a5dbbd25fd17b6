"""The plugin's settings, from environment variables or a small JSON file (docs/vllm.md, "Enable").

| variable | JSON key | meaning | default |
|---|---|---|---|
| ``RESISPEC_VLLM_AUDIT_DIR`` | ``audit_dir`` | folder of the token log's shards; the audit hooks are on iff set | off |
| ``RESISPEC_VLLM_AUDIT_SEED`` | ``audit_seed`` | seed of the PIT uniforms (with the process id) | 0 |
| ``RESISPEC_VLLM_SHARD_TOKENS`` | ``shard_tokens`` | tokens per shard (each shard is written whole) | 4096 |
| ``RESISPEC_VLLM_FIX_EXPAND`` | ``fix_expand`` | ``1``: replace the ``expand_kernel`` shim (vllm#55005) | 0 |
| ``RESISPEC_VLLM_VERIFIER`` | ``verifier`` | the chain verifier: ``vllm`` (its own), ``block`` or ``sps`` | vllm |

``RESISPEC_VLLM_CONFIG`` names the JSON file; a variable that is set wins over the file's key.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

VERIFIERS = ("vllm", "block", "sps")
PREFIX = "RESISPEC_VLLM_"
KEYS = ("audit_dir", "audit_seed", "shard_tokens", "fix_expand", "verifier")


@dataclass(frozen=True)
class PluginConfig:
    audit_dir: Path | None = None
    audit_seed: int = 0
    shard_tokens: int = 4096
    fix_expand: bool = False
    verifier: str = "vllm"


def _integer(name: str, value: object, low: int) -> int:
    try:
        number = int(str(value))
    except ValueError:
        raise ValueError(f"{name}: expected an integer >= {low}, got {value!r}") from None
    if number < low:
        raise ValueError(f"{name}: expected an integer >= {low}, got {value!r}")
    return number


def _flag(name: str, value: object) -> bool:
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"{name}: expected 1 or 0, got {value!r}")


def load_config(environ: dict[str, str] | None = None) -> PluginConfig:
    """The settings from ``environ`` (default ``os.environ``) and the file it names; ``ValueError`` naming the
    variable (or the file and key) that is wrong."""
    environ = dict(os.environ if environ is None else environ)
    raw: dict[str, tuple[str, object]] = {}
    if environ.get(PREFIX + "CONFIG"):
        path = Path(environ[PREFIX + "CONFIG"])
        try:
            content = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise ValueError(f"{PREFIX}CONFIG: cannot read {path} as JSON ({type(error).__name__})") from None
        if not isinstance(content, dict):
            raise ValueError(f"{PREFIX}CONFIG: {path} must hold a JSON object")
        unknown = sorted(set(content) - set(KEYS))
        if unknown:
            raise ValueError(f"{PREFIX}CONFIG: {path}: unknown key {unknown[0]!r}; known: {', '.join(KEYS)}")
        raw.update({key: (f"{path}: {key}", value) for key, value in content.items()})
    for key in KEYS:
        if environ.get(PREFIX + key.upper()) is not None:
            raw[key] = (PREFIX + key.upper(), environ[PREFIX + key.upper()])
    settings: dict[str, object] = {}
    if "audit_dir" in raw and str(raw["audit_dir"][1]):
        settings["audit_dir"] = Path(str(raw["audit_dir"][1]))
    if "audit_seed" in raw:
        settings["audit_seed"] = _integer(*raw["audit_seed"], low=0)
    if "shard_tokens" in raw:
        settings["shard_tokens"] = _integer(*raw["shard_tokens"], low=1)
    if "fix_expand" in raw:
        settings["fix_expand"] = _flag(*raw["fix_expand"])
    if "verifier" in raw:
        name, value = raw["verifier"]
        if value not in VERIFIERS:
            raise ValueError(f"{name}: expected one of {', '.join(VERIFIERS)}, got {value!r}")
        settings["verifier"] = value
    return PluginConfig(**settings)
