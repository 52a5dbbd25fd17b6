"""Edge probes: every uniform the sampler draws forced to an edge of ``[0, 1)``, then the output contract.

A sampling audit cannot see what happens once in 2^24 draws: float32 ``torch.rand`` returns exactly 0 about
that often, and ``u <= ratio`` then accepts a candidate whose ratio is 0 (a token with p = 0). The probe runs
the sampler on rows built to expose such branches (``models.ZERO_PAIRS``: candidates with p = 0 and q > 0)
with its randomness forced to each edge ``EDGES``:

- torch (``arrays="torch"``): a ``torch.overrides.TorchFunctionMode`` fills the results of ``torch.rand``,
  ``torch.rand_like``, ``Tensor.uniform_`` with u, ``Tensor.exponential_`` with ``-log(1 - u) / lambda``, and
  replaces ``torch.multinomial`` (one sample per row) by the inverse CDF at u (at u = 0 the first token of
  positive weight, as a correct multinomial can return); other random functions (``randn``, ``randint``,
  ``bernoulli``, ``normal_``, ...) are counted as reached but not forced;
- NumPy (``arrays="numpy"``): ``numpy.random.random`` / ``rand`` / ``random_sample`` / ``uniform`` and every
  ``numpy.random.default_rng()`` made during the call (and the ``rng`` extra) return an ``EdgeGenerator``
  whose ``random``, ``uniform``, ``exponential``, ``standard_exponential`` and ``gumbel`` are forced; other
  methods draw from a real generator and are counted as not forced.

A probe *reaches* an edge when at least one draw was forced; a probe that reaches none says so (its clean
output then shows nothing).
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

EDGES: dict[str, float] = {
    "0": 0.0,
    "smallest positive float32": float(np.finfo(np.float32).tiny),
    "1 - 2^-24": 1.0 - 2.0 ** -24,
    "1 - ulp": float(np.nextafter(1.0, 0.0)),
}
"""The forced values. "1 - 2^-24" is the largest float32 below 1 (the largest float32 ``torch.rand`` returns);
"1 - ulp" is the largest float64 below 1, which rounds to 1.0 in float32, so a float32 result gets the largest
float32 below 1 instead (``_below_one``): in float32 the last two edges coincide."""

def edge_likelihood(edge: str, dtype: str) -> str:
    """How often a uniform of ``dtype`` (float32: torch's grid of 2^-24; float64: NumPy's and torch's grid of
    2^-53) takes the forced value, per draw."""
    bits = 24 if dtype == "float32" else 53
    if edge == "smallest positive float32":
        return f"never on the {dtype} grid of 2^-{bits}; stands for its smallest positive draw, 1 in 2^{bits}"
    if edge == "1 - ulp" and dtype == "float32":
        return "1 - 2^-24 in float32: 1 in 2^24"
    if edge == "1 - 2^-24" and dtype == "float64":
        return "on the float64 grid: 1 in 2^53"
    return f"1 in 2^{bits} {dtype} draws"


TORCH_UNFORCED = ("randn", "randn_like", "randint", "randint_like", "randperm", "normal", "bernoulli", "poisson",
                  "normal_", "random_", "bernoulli_", "geometric_", "cauchy_", "log_normal_")


@dataclass
class EdgeRecord:
    """What one edge reached: forced draws per function, unforced random calls per function."""

    edge: str
    forced: Counter = field(default_factory=Counter)
    unforced: Counter = field(default_factory=Counter)

    @property
    def reached(self) -> bool:
        return sum(self.forced.values()) > 0


def _below_one(value: float, dtype) -> float:
    """``value`` as the largest number of ``dtype`` below 1 if it would round to 1."""
    import torch

    return min(value, 1.0 - torch.finfo(dtype).eps / 2) if dtype.is_floating_point else value


@contextlib.contextmanager
def torch_edge(edge: str) -> Iterator[EdgeRecord]:
    """Force torch's uniforms to ``EDGES[edge]`` inside the block (module doc)."""
    import torch
    from torch.overrides import TorchFunctionMode

    value = EDGES[edge]
    record = EdgeRecord(edge)

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = getattr(func, "__name__", str(func))
            if func in (torch.rand, torch.rand_like):
                out = func(*args, **kwargs)
                record.forced[name] += 1
                with torch.no_grad():
                    return out.fill_(_below_one(value, out.dtype))
            if func is torch.Tensor.uniform_:
                tensor = args[0]
                low = kwargs.get("from", args[1] if len(args) > 1 else 0.0)
                high = kwargs.get("to", args[2] if len(args) > 2 else 1.0)
                record.forced[name] += 1
                with torch.no_grad():
                    return tensor.fill_(low + (high - low) * _below_one(value, tensor.dtype))
            if func is torch.Tensor.exponential_:
                tensor = args[0]
                rate = kwargs.get("lambd", args[1] if len(args) > 1 else 1.0)
                record.forced[name] += 1
                with torch.no_grad():
                    return tensor.fill_(-math.log1p(-_below_one(value, tensor.dtype)) / rate)
            if func is torch.multinomial:
                weights = args[0]
                samples = kwargs.get("num_samples", args[1] if len(args) > 1 else 1)
                if samples == 1 or kwargs.get("replacement", args[2] if len(args) > 2 else False):
                    record.forced[name] += 1
                    return _inverse_cdf_rows(weights, value, samples)
                record.unforced[name] += 1
            elif name in TORCH_UNFORCED:
                record.unforced[name] += 1
            return func(*args, **kwargs)

    with Mode():
        yield record


def _inverse_cdf_rows(weights, value: float, samples: int):
    """Per row the smallest id with ``cumsum(w) > value * sum(w)``, clamped to the last positive weight."""
    import torch

    rows = weights.reshape(-1, weights.shape[-1]).double()
    cumulative = rows.cumsum(-1)
    index = (cumulative <= value * cumulative[:, -1:]).sum(-1)
    last = (rows > 0).cumsum(-1).argmax(-1)
    index = torch.minimum(index, last)
    return index[:, None].expand(-1, samples).reshape(*weights.shape[:-1], samples).contiguous()


class EdgeGenerator:
    """A stand-in for ``numpy.random.Generator`` whose uniform-based draws are forced (module doc)."""

    def __init__(self, value: float, record: EdgeRecord) -> None:
        self._value, self._record = value, record
        self._real = np.random.default_rng(0)

    def _fill(self, name: str, size, value: float):
        self._record.forced[name] += 1
        return value if size is None else np.full(size, value)

    def random(self, size=None, dtype=np.float64, out=None):
        return self._fill("Generator.random", size, self._value)

    def uniform(self, low=0.0, high=1.0, size=None):
        return self._fill("Generator.uniform", size, low + (high - low) * self._value)

    def standard_exponential(self, size=None, dtype=np.float64, method="zig", out=None):
        return self._fill("Generator.standard_exponential", size, -math.log1p(-self._value))

    def exponential(self, scale=1.0, size=None):
        return self._fill("Generator.exponential", size, -scale * math.log1p(-self._value))

    def gumbel(self, loc=0.0, scale=1.0, size=None):
        with np.errstate(divide="ignore"):
            return self._fill("Generator.gumbel", size, loc - scale * np.log(-np.log(self._value)))

    def __getattr__(self, name: str):
        self._record.unforced[f"Generator.{name}"] += 1
        return getattr(self._real, name)


@contextlib.contextmanager
def numpy_edge(edge: str) -> Iterator[tuple[EdgeRecord, EdgeGenerator]]:
    """Force NumPy's uniforms to ``EDGES[edge]`` inside the block (module doc); yields the record and the
    generator handed as the ``rng`` extra."""
    value = EDGES[edge]
    record = EdgeRecord(edge)
    generator = EdgeGenerator(value, record)
    module = np.random
    saved = {name: getattr(module, name) for name in ("random", "rand", "random_sample", "uniform", "default_rng")}

    def legacy(name: str, scale: bool = False):
        def draw(*args, **kwargs):
            record.forced[f"numpy.random.{name}"] += 1
            if scale:
                low = kwargs.get("low", args[0] if args else 0.0)
                high = kwargs.get("high", args[1] if len(args) > 1 else 1.0)
                size = kwargs.get("size", args[2] if len(args) > 2 else None)
                return low + (high - low) * value if size is None else np.full(size, low + (high - low) * value)
            size = args if name == "rand" else kwargs.get("size", args[0] if args else None)
            return value if size in (None, ()) else np.full(size, value)
        return draw

    module.random, module.rand = legacy("random"), legacy("rand")
    module.random_sample, module.uniform = legacy("random_sample"), legacy("uniform", scale=True)
    module.default_rng = lambda *args, **kwargs: generator
    try:
        yield record, generator
    finally:
        for name, function in saved.items():
            setattr(module, name, function)
