"""The process-wide generators a sampler may draw from, seeded per call and restored after it.

Samplers as engines ship them often draw from a global generator rather than one they are handed:
transformers' ``_speculative_sampling`` calls ``torch.rand_like`` and ``torch.multinomial`` on torch's default
generator. For an audit of such a sampler to be reproducible from its ``seed`` (the same calls, the same tokens,
the same verdict), each call runs with Python's ``random``, NumPy's legacy global generator and, where torch is
imported, torch's default generator (CPU, and the CUDA devices already initialized) seeded from the call's seed;
the caller's states are put back afterwards, so an audit leaves the caller's random streams where they were.
The three seeds come from ``numpy.random.SeedSequence([call_seed, GLOBAL_STREAM])``: independent of the ``rng``
extra seeded with ``call_seed`` itself (``contract.extra_arguments``).
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import numpy as np

GLOBAL_STREAM = 0x5EED
"""The spawn key that separates the global generators' seeds from the ``rng`` extra's seed."""


@contextmanager
def seeded_global_generators(call_seed: int) -> Iterator[None]:
    """Run the block with the global generators seeded from ``call_seed``; restore the caller's states after."""
    python_seed, numpy_seed, torch_seed = (int(s) for s in
                                           np.random.SeedSequence([call_seed, GLOBAL_STREAM]).generate_state(3))
    python_state, numpy_state = random.getstate(), np.random.get_state()
    torch = sys.modules.get("torch")
    with ExitStack() as stack:
        if torch is not None:
            cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
            stack.enter_context(torch.random.fork_rng(devices=cuda))
            torch.manual_seed(torch_seed)
        random.seed(python_seed)
        np.random.seed(numpy_seed)
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)
