"""partial_resolution, pooled's optimal selection with only the drawn candidates' pools resolved
(docs/verifiers/partial_resolution.md), in one folder.

- ``rule``: the verifier and its known-biased control (``partial_resolution_unpooled``).
- ``plan``: the per-row plan and the per-tuple resolution of the candidates' pools.
"""

from resispec.verifiers.partial_resolution.rule import PartialResolution, PartialResolutionUnpooled

__all__ = ["PartialResolution", "PartialResolutionUnpooled"]
