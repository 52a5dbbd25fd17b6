"""Every size limit of the toolkit, in one place (documented in docs/limits.md).

Each input is checked against its limit at the boundary, before any work or allocation, with a
``ValueError`` that names the limit; past them a call would run for hours or allocate more memory
than a workstation has (pooled's plan at k = 10**13, a dense LP at V = 10**5, a logged file whose
header declares hundreds of GiB).
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_CANDIDATES = 1024
"""k: candidates per verification (pooled's plan costs O(V k); ``Q**k`` terms need k in range)."""

MAX_VOCAB = 1 << 20
"""V: entries of one probability vector (1,048,576; LLM vocabularies are 32k to 256k)."""

MAX_TREE_NODES = 1024
"""Drafted nodes of one speculation tree (``sum_d prod_{i <= d} b_i`` for branching b_1..b_D)."""

MAX_TUPLES = 200_000
"""Candidate tuples one exact-law enumeration may visit (``max_tuples`` may lower it, not raise it)."""

LP_MAX_TUPLES = 200_000
"""Candidate tuples the transport LP enumerates (alpha*-WOR by LP)."""

SEQUENTIAL_LP_MAX_VARIABLES = 2_000
"""Variables ``k V`` of the dense sequential LP (its matrix holds ``(k V)**2 + k V**2`` floats)."""

SEQUENTIAL_LP_MAX_NODES = 50_000
"""Nodes (variables) of the sequential WOR LP: just under it (V = 223, k = 2: 49,729 nodes) 11 s on this
2-core machine under load 9; at 199,809 nodes (V = 447, k = 2, under the old limit 200,000) it ran past
4 minutes."""

MAX_DRAWN_CANDIDATES = 1 << 19
"""Candidates ``n k`` one ``draft_and_verify(n, rng)`` call draws (524,288; its candidate and uniform rows,
and the per-row work of drafting, grow with ``n k``): just under it, 31 s for rrs_wor at k = 8, V = 1000
on this 2-core machine under load 9; call it again for more samples."""

MAX_ROUND_SEQUENCES = 1 << 18
"""Sequences ``V^(D+1)`` the round-level exact-law audit holds (262,144 float64 entries per law; the
target's continuations are enumerated over them): V = 1000 on a 3-chain asked for 7 TiB before."""

MIN_TEMPERATURE = 1e-6
"""Smallest positive sampling temperature (0 is greedy): below it ``logits / T`` overflows or leaves a
distribution that is the argmax to double precision (a logit gap of 1e-3 already weighs exp(-1000))."""

MAX_LOGGED_FILE_BYTES = 1 << 30
"""Size of a logged-pairs ``.npz`` file on disk (1 GiB)."""

MAX_LOGGED_ARRAY_BYTES = 1 << 31
"""Total uncompressed size the arrays of one logged-pairs file may declare in their headers (2 GiB)."""


MAX_THREADS = 1024
"""Torch CPU threads a command may ask for: torch takes a C ``int`` (2**31 overflowed in its argument parser)
and past the cores a machine has more threads only add OpenMP spin-waits."""

MAX_AUDIT_SAMPLES = 1_000_000
"""Samples per context of ``audit`` and ``audit-sampler``: each sample is a drafted row per context, held
with its target and draft rows; 20,000 took 27 s and 117 MB peak at node level, 59 s and 166 MB at chain
level (gamma 4) on 2 shared cores (Xeon, load 10, 2026-12-07), so the limit is 20-50 minutes and 2-5 GB;
``10**12`` asked for terabytes before (a 23-line MemoryError that read as a rejection)."""

MAX_TIME_LIMIT = 86_400.0
"""Seconds ``--time-limit`` may give one call of an audited sampler (a day): ``setitimer`` overflows past
about 2**63 microseconds, and a call that needs more is not a sampler one can audit by sampling."""


def check_limit(value: int, limit: int, name: str, what: str) -> int:
    """``value`` if it is at most ``limit``; else a ``ValueError`` naming the argument and the limit."""
    if value > limit:
        raise ValueError(f"{name}: {what} = {value} exceeds the limit {limit} (resispec.limits)")
    return value


def check_tree_size(branching: Sequence[int], name: str = "tree") -> int:
    """The drafted nodes ``sum_d prod_{i <= d} b_i`` of a tree with branchings ``b_1..b_D`` (each >= 1);
    a ``ValueError`` naming ``MAX_TREE_NODES`` past it (counted without forming huge products)."""
    nodes, width = 0, 1
    for children in branching:
        if children < 1:
            raise ValueError(f"{name}: every branching must be >= 1, got {','.join(map(str, branching))}")
        width *= children
        nodes += width
        if nodes > MAX_TREE_NODES:
            raise ValueError(f"{name}: {','.join(map(str, branching))} has more than {MAX_TREE_NODES} drafted "
                             "nodes, the limit MAX_TREE_NODES (resispec.limits)")
    return nodes
