"""Pair sources: seeded synthetic families of (target p, draft q) pairs, and logged pairs.

A source is named by a spec string ``NAME[:key=value,...]`` (``parse_source``):

- ``dirichlet:alpha=A,V=V,mix=M`` -- ``p ~ Dir(A 1_V)``, ``q = (1 - M) Dir(A 1_V) + M p`` (independent
  draws; ``mix`` pulls the draft towards the target).
- ``zipf:s=S,V=V,head=H,mode=permute|perturb,sigma=SIG`` -- ``p(x) ∝ rank(x)^-S`` over a random
  permutation of the ids; the draft copies p except on p's top-H tokens ("the head"), whose
  probabilities it permutes at random (``permute``) or multiplies by ``exp(SIG eps)``, ``eps ~ N(0, 1)``,
  then renormalises (``perturb``).
- ``temperature:tau=T,V=V,scale=C`` -- temperature mismatch: ``p = softmax(C z)``, ``q ∝ p^(1/T)``
  (``= softmax(C z / T)``), ``z ~ N(0, I_V)``.
- ``llm:sigma=SIG,V=V,scale=C`` -- LLM-like logits with draft noise: ``p = softmax(C z)``,
  ``q = softmax(C z + SIG eps)``.
- every synthetic family takes ``top_k=K`` and/or ``top_p=P``: target and draft are each truncated
  to their own top-K tokens / smallest top set of mass >= P (ties by token id) and renormalised, as
  a sampler would. This puts zeros in p where q > 0 and in q where p > 0.
- ``logged:FILE[,draft=NAME][,tail=merge|split]`` -- rows of a logged-pairs file (``resispec.formats.pairs``), in
  file order; ``logged:sample`` is the small SmolLM2 example shipped with the package. ``tail``: how a
  sparse row's tail masses become tokens (``LoggedPairs.pairs``): one shared bucket (``merge``, the
  default; an upper bound on the overlap) or one bucket each (``split``; a lower bound).

Synthetic pairs are independent across rows; consecutive rows are grouped into chains of
``SYNTHETIC_CHAIN`` positions so that tree replays treat them as a stationary sequence.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from resispec.formats.pairs import TAIL_MODES, read_logged
from resispec.limits import MAX_VOCAB, check_limit
from resispec.sim.batch import SAMPLE_PATH, PairBatch

SYNTHETIC_CHAIN = 16
"""Positions per chain of synthetic pairs (the tree replay walks along chains)."""


def truncate_rows(rows: np.ndarray, top_k: int | None, top_p: float | None) -> np.ndarray:
    """Each row (shape (N, V)) cut to its top-``top_k`` tokens and to the smallest set of its largest
    tokens with mass ``>= top_p`` (descending, ties by token id), renormalised."""
    if top_k is None and top_p is None:
        return rows
    order = np.argsort(-rows, axis=1, kind="stable")
    ordered = np.take_along_axis(rows, order, axis=1)
    keep = np.ones(rows.shape, dtype=bool)
    if top_k is not None:
        keep[:, top_k:] = False
    if top_p is not None:
        mass_before = np.cumsum(ordered, axis=1) - ordered
        keep &= mass_before < top_p
    kept = np.zeros_like(rows)
    np.put_along_axis(kept, order, np.where(keep, ordered, 0.0), axis=1)
    return kept / kept.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class SyntheticFamily(ABC):
    """A seeded, parameterised family of pairs; ``top_k`` / ``top_p`` truncate target and draft."""

    name: ClassVar[str]
    top_k: int | None = None
    top_p: float | None = None

    def __post_init__(self) -> None:
        if self.top_k is not None and self.top_k < 1:
            raise ValueError(f"top_k: must be >= 1, got {self.top_k}")
        if self.top_p is not None and not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p: must lie in (0, 1], got {self.top_p}")

    @abstractmethod
    def raw_pairs(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``(p, q)``, shape (count, V) each, before truncation."""

    def sample(self, count: int, rng: np.random.Generator) -> PairBatch:
        """``count`` pairs drawn with ``rng``, truncated, in chains of ``SYNTHETIC_CHAIN`` positions."""
        p, q = self.raw_pairs(count, rng)
        p, q = truncate_rows(p, self.top_k, self.top_p), truncate_rows(q, self.top_k, self.top_p)
        rows = np.arange(count)
        return PairBatch.from_arrays(p, q, self.spec, rows // SYNTHETIC_CHAIN, rows % SYNTHETIC_CHAIN)

    @property
    def spec(self) -> str:
        """The canonical spec string, e.g. ``llm:sigma=1,V=256,scale=3``."""
        fields = sorted(dataclasses.fields(self), key=lambda field: field.name in ("top_k", "top_p"))
        values = [(field.name, getattr(self, field.name)) for field in fields]
        return f"{self.name}:" + ",".join(f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}"
                                          for key, value in values if value is not None)


def _positive(name: str, value: float) -> None:
    if not 0 < value < float("inf"):
        raise ValueError(f"{name}: must be finite and > 0, got {value}")


def _vocabulary(size: int) -> None:
    if size < 2:
        raise ValueError(f"V: the vocabulary needs at least 2 tokens, got {size}")
    check_limit(size, MAX_VOCAB, "V", "the vocabulary size")


@dataclass(frozen=True)
class Dirichlet(SyntheticFamily):
    """``p ~ Dir(alpha 1_V)``, ``q = (1 - mix) Dir(alpha 1_V) + mix p``."""

    name: ClassVar[str] = "dirichlet"
    alpha: float = 1.0
    V: int = 256
    mix: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive("alpha", self.alpha)
        _vocabulary(self.V)
        if not 0.0 <= self.mix <= 1.0:
            raise ValueError(f"mix: must lie in [0, 1], got {self.mix}")

    def raw_pairs(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        concentration = np.full(self.V, self.alpha)
        p = rng.dirichlet(concentration, size=count)
        q = (1.0 - self.mix) * rng.dirichlet(concentration, size=count) + self.mix * p
        return p, q / q.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Zipf(SyntheticFamily):
    """``p ∝ rank^-s`` over randomly permuted ids; the draft permutes or perturbs p's top-``head``."""

    name: ClassVar[str] = "zipf"
    s: float = 1.1
    V: int = 256
    head: int = 16
    mode: str = "permute"
    sigma: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive("s", self.s)
        _vocabulary(self.V)
        if not 1 <= self.head <= self.V:
            raise ValueError(f"head: must lie in [1, V = {self.V}], got {self.head}")
        if self.mode not in ("permute", "perturb"):
            raise ValueError(f"mode: expected 'permute' or 'perturb', got {self.mode!r}")
        if self.sigma < 0:
            raise ValueError(f"sigma: must be >= 0, got {self.sigma}")

    def raw_pairs(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        weights = np.arange(1, self.V + 1, dtype=np.float64) ** -self.s
        weights /= weights.sum()
        ids_by_rank = rng.permuted(np.tile(np.arange(self.V), (count, 1)), axis=1)
        p = np.zeros((count, self.V))
        np.put_along_axis(p, ids_by_rank, np.broadcast_to(weights, p.shape), axis=1)
        head_ids = ids_by_rank[:, : self.head]
        head = np.tile(weights[: self.head], (count, 1))
        if self.mode == "permute":
            head = rng.permuted(head, axis=1)
        else:
            head = head * np.exp(self.sigma * rng.standard_normal(head_ids.shape))
        q = p.copy()
        np.put_along_axis(q, head_ids, head, axis=1)
        return p, q / q.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class LogitFamily(SyntheticFamily):
    """Families defined by target and draft logits; ``p = softmax(target logits)``."""

    V: int = 256
    scale: float = 3.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _vocabulary(self.V)
        if self.scale < 0:
            raise ValueError(f"scale: must be >= 0, got {self.scale}")

    @abstractmethod
    def draft_logits(self, target: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The draft's logits given the target's (shape (count, V))."""

    def logits(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``(target logits, draft logits)``, shape (count, V) each; target logits ``scale z``."""
        target = self.scale * rng.standard_normal((count, self.V))
        return target, self.draft_logits(target, rng)

    def raw_pairs(self, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        from scipy.special import softmax  # deferred: see the resispec package doc

        target, draft = self.logits(count, rng)
        return softmax(target, axis=1), softmax(draft, axis=1)


@dataclass(frozen=True)
class Temperature(LogitFamily):
    """``p = softmax(scale z)``, ``q ∝ p^(1/tau) = softmax(scale z / tau)``."""

    name: ClassVar[str] = "temperature"
    tau: float = 0.7

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive("tau", self.tau)

    def draft_logits(self, target: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return target / self.tau


@dataclass(frozen=True)
class LLMLike(LogitFamily):
    """``p = softmax(scale z)``, ``q = softmax(scale z + sigma eps)``, ``z, eps ~ N(0, I_V)``."""

    name: ClassVar[str] = "llm"
    sigma: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sigma < 0:
            raise ValueError(f"sigma: must be >= 0, got {self.sigma}")

    def draft_logits(self, target: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return target + self.sigma * rng.standard_normal(target.shape)


@dataclass(frozen=True)
class LoggedSource:
    """Rows of a logged-pairs file, in file order (``count`` takes the first rows)."""

    path: str
    draft: str = "q"
    tail: str = "merge"

    def __post_init__(self) -> None:
        if self.tail not in TAIL_MODES:
            raise ValueError(f"source {self.spec!r}: tail must be one of {', '.join(TAIL_MODES)}, got {self.tail!r}")

    @property
    def spec(self) -> str:
        return (f"logged:{self.path}" + ("" if self.draft == "q" else f",draft={self.draft}")
                + ("" if self.tail == "merge" else f",tail={self.tail}"))

    def sample(self, count: int, rng: np.random.Generator) -> PairBatch:
        """The first ``count`` rows (the generator is unused: logged pairs are fixed)."""
        path = SAMPLE_PATH if self.path == "sample" else self.path
        batch = PairBatch.from_logged(read_logged(path), self.draft, source=self.spec, tail=self.tail)
        return batch.head(count)


FAMILIES: dict[str, type[SyntheticFamily]] = {
    family.name: family for family in (Dirichlet, Zipf, Temperature, LLMLike)
}
"""Synthetic families by name."""

Source = SyntheticFamily | LoggedSource


def readable_spec(spec: str) -> str:
    """``spec`` as a figure shows it: a logged file's path relative to the working directory (the
    repository root, where the figure scripts run) when the file lies under it, else the file's name
    alone (a machine's absolute path tells a reader nothing); any other spec unchanged."""
    name, _, arguments = spec.partition(":")
    path, comma, options = arguments.partition(",")
    if name != "logged" or path == "sample":
        return spec
    try:
        shown = Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        shown = Path(path).name
    return f"logged:{shown}{comma}{options}"


def parse_source(spec: str) -> Source:
    """The source named by ``spec`` (see the module docstring); ``ValueError`` naming what is wrong."""
    name, _, arguments = spec.partition(":")
    items = [item.strip() for item in arguments.split(",") if item.strip()]
    if name == "logged":
        if not items or "=" in items[0]:
            raise ValueError(
                f"source {spec!r}: expected logged:FILE[,draft=NAME][,tail=merge|split] (or logged:sample)")
        options = _options(spec, items[1:], {"draft": str, "tail": str})
        return LoggedSource(items[0], **options)
    if name not in FAMILIES:
        raise ValueError(f"source {spec!r}: unknown family {name!r}; known: {', '.join([*FAMILIES, 'logged'])}")
    family = FAMILIES[name]
    types = {field.name: _field_type(field) for field in dataclasses.fields(family)}
    options = _options(spec, items, types)
    try:
        return family(**options)
    except ValueError as error:
        raise ValueError(f"source {spec!r}: {error}") from None


def _field_type(field: dataclasses.Field) -> type:
    annotation = str(field.type)
    return int if annotation.startswith("int") else float if annotation.startswith("float") else str


def _options(spec: str, items: list[str], types: dict[str, type]) -> dict[str, object]:
    options: dict[str, object] = {}
    for item in items:
        key, equals, value = item.partition("=")
        if not equals or key not in types:
            raise ValueError(f"source {spec!r}: bad parameter {item!r}; parameters: {', '.join(types)}")
        if key in options:
            raise ValueError(f"source {spec!r}: parameter {key} given twice")
        try:
            options[key] = types[key](value)
        except ValueError:
            raise ValueError(f"source {spec!r}: parameter {key} expects {types[key].__name__}, got {value!r}") from None
    return options
