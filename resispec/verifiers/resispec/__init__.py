"""resispec, exact residual shaping for i.i.d. candidates (docs/verifiers.md), in one folder.

- ``rule``: the verifier class.
- ``plan``: the threshold schedule ``T_1 >= ... >= T_k`` per row.
"""

from resispec.verifiers.resispec.rule import ResiSpec

__all__ = ["ResiSpec"]
