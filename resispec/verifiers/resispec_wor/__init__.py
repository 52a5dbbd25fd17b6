"""resispec_wor, residual shaping for WOR candidates (docs/resispec_wor.md), in one folder.

- ``rule``: the verifier class.
- ``plan``: the "latest first" plan per row (the step-1 acceptance and the states after a rejection).
"""

from resispec.verifiers.resispec_wor.rule import ResiSpecWithoutReplacement

__all__ = ["ResiSpecWithoutReplacement"]
