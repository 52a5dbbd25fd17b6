"""ResiSpec: exact multi-candidate speculative sampling.

``p`` is always the target distribution and ``q`` the draft. ``VERIFIERS`` maps names to verifier
classes; ``get_verifier(name)`` returns an instance implementing the contract in
``resispec.verifiers.base``. They are loaded on first use (PEP 562): importing any ``resispec`` module, the
CLI's included, does not import the zoo and its SciPy solvers.

SciPy is imported inside the functions that use it (its linear programs, statistics and special functions),
never at a module's top: ``scipy.stats`` alone takes 0.4-1.0 s to import, and the CLI's commands, the
engine's ``generate`` above all, start without it.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["VERIFIERS", "BoundVerifier", "Verifier", "get_verifier"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("resispec.verifiers"), name)
    raise AttributeError(f"module 'resispec' has no attribute {name!r}")
