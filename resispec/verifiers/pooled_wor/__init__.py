"""pooled_wor, a set-level WOR verifier (docs/pooled_wor.md), in one folder.

- ``rule``: the verifier class (select one candidate, then single-draft verification).
- ``plan``: the selection plan per row (the ratio-prefix cut, the thinned scans and their law).
- ``mixture``: column generation over "latest in order" rules where the scan falls short of alpha*-WOR.
- ``scan``: the thinned scan's inner loops (numba).
"""

from resispec.verifiers.pooled_wor.rule import PooledWithoutReplacement

__all__ = ["PooledWithoutReplacement"]
