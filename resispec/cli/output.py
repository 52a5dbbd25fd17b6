"""Strict JSON for every ``--json`` output: NaN and infinities (a figure not defined or not measured)
become ``null``, so the output parses with any JSON reader (bare ``NaN`` is not JSON)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def finite_or_none(value: Any) -> Any:
    """``value`` with every non-finite float (NumPy scalars and arrays included) replaced by None."""
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        return finite_or_none(value.tolist())
    if isinstance(value, dict):
        return {key: finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(item) for item in value]
    return value


def strict_json(value: Any) -> str:
    """``json.dumps`` (indent 2, ``allow_nan=False``) of ``value`` with non-finite figures as null."""
    return json.dumps(finite_or_none(value), indent=2, allow_nan=False)
