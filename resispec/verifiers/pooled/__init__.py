"""pooled, priority-score selection then single-draft verification (docs/pooled.md), in one folder.

- ``rule``: the verifier class.
- ``plan``: the per-row plan (the priority-score selection and its law ``t``).
"""

from resispec.verifiers.pooled.rule import Pooled

__all__ = ["Pooled"]
