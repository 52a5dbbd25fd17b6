"""The sampler contract: what ``audit_sampler`` hands a plain callable, and what it must return.

Shapes per level (``B`` rows per call, ``V`` tokens; row ``b`` of every argument belongs to one context):

- ``node``:  ``fn(p (B, V), q (B, V), candidates (B, k)) -> tokens (B,)``: one node per row;
- ``chain``: ``fn(p (B, gamma + 1, V), q (B, gamma, V), drafts (B, gamma)) -> out (B, gamma + 1)``: row
  ``p[:, i]`` is the target at draft position i given the drafts before it, ``p[:, gamma]`` the bonus row,
  ``q[:, i]`` the draft law ``drafts[:, i]`` was drawn from; ``out`` holds the emitted tokens (accepted drafts,
  then one more), then ``-1`` padding (vLLM's and transformers' layout);
- ``tree``:  ``fn(p (B, L, D + 1, V), q (B, L, D, V), paths (B, L, D)) -> out (B, D + 1)``: the drafted tree as
  its ``L = prod(branching)`` root-to-leaf paths (EAGLE's ``candidates`` / ``retrieve_indices`` layout, the root
  token left out): ``paths[:, l, d]`` is the depth-(d + 1) token of path l, ``p[:, l, d]`` the target after the
  path's first d tokens, ``q[:, l, d]`` the draft law the path's token at depth d + 1 was drawn from (siblings
  share it). Paths are in the order of their child slots (path l's slot at depth d is digit d of l in the
  mixed radix ``branching``), so paths sharing a prefix of slots share those tokens and rows. ``out``: the
  accepted path's tokens, then the next token, then ``-1`` padding. With ``q_layout="parent"`` q is one row per
  internal node, ``(B, N, V)``, breadth first (root first, children in slot order), as engines keep it.

Inputs: ``arrays`` ``"numpy"`` or ``"torch"`` (CPU tensors), ``dtype`` float32 / float64, ``inputs`` ``"probs"``,
``"logits"`` (``log p`` plus a per-row offset, ``-inf`` where ``p = 0``) or ``"target-logits"`` (the target as
logits, the draft as probabilities); ids are int64. The model handed over
is *unprocessed*; processing claims (temperature, top-k, top-p) are the sampler's job.

Extras a sampler declares (keyword arguments, one entry per row): ``seeds`` (a list of int or None: some rows
seeded, others not), ``generators`` (torch only: a list of ``torch.Generator`` or None), ``lengths`` (chain
only: each row's draft length, ``0 <= lengths[b] <= gamma``; past it ``drafts`` is -1 and ``p`` / ``q`` rows
are uniform padding, ``p[b, lengths[b]]`` is the row's bonus row), ``rng`` (a ``numpy.random.Generator`` for
``arrays="numpy"``, a ``torch.Generator`` for torch, fresh per call), ``positions`` (engine drafting only: each
row's token position, the offset engines key their per-request randomness by; ``engine_drafting``), ``history``
(each row's ids generated before it, a tuple: the penalties and ``min_tokens`` act on it and, along a chain, on
the round's earlier drafts, which the sampler adds), ``processing`` (each row's claims, a
``resispec.processing.Processing``: rows of one call carry different parameters, the groups ``vary`` names,
``row_parameters``; without it every row has the audit's claims), ``generator_map`` (torch only:
``{row: torch.Generator}`` for the seeded rows, vLLM's layout),
``bonus`` (chain only: each row's bonus token, drawn by the audit from the processed bonus row and handed in as
vLLM's ``bonus_token_ids`` are; a fully accepted row must emit it), ``branching`` (tree only: the children count per
depth, a tuple).

``drafting="engine"``: the sampler draws the drafts itself (a tree's siblings i.i.d.; ``"engine-wor"``: a tree's
siblings without replacement) and returns them with the emitted tokens (``resispec.audit.sampler.engine_drafting``
gives the calls).

A call that raises, hangs past ``time_limit`` seconds, or returns anything but an integer array of the output
shape is a ``SamplerError`` (a ``ValueError``: the CLI's one-line usage error) naming what was wrong.
"""

from __future__ import annotations

import inspect
import math
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from resispec.audit.sampler.row_parameters import check_vary, needs_logits
from resispec.processing import Processing

LEVELS = ("node", "chain", "tree")
ARRAYS = ("numpy", "torch")
DTYPES = ("float32", "float64")
INPUTS = ("probs", "logits", "target-logits")
"""``target-logits``: the target as logits, the draft as probabilities (vLLM's rejection sampler takes them so)."""
EXTRAS = ("seeds", "generators", "generator_map", "lengths", "rng", "positions", "history", "processing", "bonus",
          "branching")
ENGINE = "engine"
"""``drafting=ENGINE``: the sampler draws its own drafts (``resispec.audit.sampler.engine_drafting``)."""
ENGINE_SCHEMES = {ENGINE: "iid", "engine-wor": "wor"}
"""Engine drafting's options and the scheme of the siblings each declares (``engine-wor``: trees only)."""
Q_LAYOUTS = ("paths", "parent")
"""Tree: q per path and depth ``(B, L, D, V)``, or one row per parent ``(B, N, V)`` (``drafting.parent_rows``)."""
DEFAULT_TIME_LIMIT = 60.0
"""Seconds one call of the sampler may take before the audit stops it (``SamplerError``)."""


class SamplerError(ValueError):
    """The sampler cannot be audited: it raised, hung, or returned something outside the contract."""


@dataclass(frozen=True)
class SamplerContract:
    """The level and its sizes, the arrays handed over, the processing claims and the declared extras."""

    level: str = "node"
    k: int = 2
    gamma: int = 4
    branching: tuple[int, ...] = (2, 2)
    arrays: str = "numpy"
    dtype: str = "float64"
    inputs: str = "probs"
    processing: Processing = field(default_factory=Processing)
    extras: tuple[str, ...] = ()
    time_limit: float = DEFAULT_TIME_LIMIT
    drafting: str = "iid"
    q_layout: str = "paths"
    vary: tuple[str, ...] = ()
    """With the ``processing`` extra: the parameter groups rows of one call differ in (``row_parameters``)."""

    def __post_init__(self) -> None:
        for name, value, allowed in (("level", self.level, LEVELS), ("arrays", self.arrays, ARRAYS),
                                     ("dtype", self.dtype, DTYPES), ("inputs", self.inputs, INPUTS)):
            if value not in allowed:
                raise ValueError(f"{name}: expected one of {', '.join(allowed)}, got {value!r}")
        for name, value in (("k", self.k), ("gamma", self.gamma)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 8:
                raise ValueError(f"{name}: expected an integer in [1, 8], got {value!r}")
        if (not isinstance(self.branching, tuple) or not 1 <= len(self.branching) <= 4
                or any(isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= 4 for b in self.branching)
                or math.prod(self.branching) > 16):
            raise ValueError(f"branching: expected 1 to 4 children counts in [1, 4] with at most 16 paths, "
                             f"got {self.branching!r}")
        unknown = [extra for extra in self.extras if extra not in EXTRAS]
        if unknown:
            raise ValueError(f"extras: unknown {', '.join(map(repr, unknown))}; known: {', '.join(EXTRAS)}")
        for name in ("generators", "generator_map"):
            if name in self.extras and self.arrays != "torch":
                raise ValueError(f"extras: {name!r} (torch.Generator per row) needs arrays='torch'")
        for name, level in (("bonus", "chain"), ("branching", "tree")):
            if name in self.extras and self.level != level:
                raise ValueError(f"extras: {name!r} applies to level={level!r} only")
        if "bonus" in self.extras and self.engine:
            raise ValueError("extras: 'bonus' hands in the audit's bonus tokens; with drafting='engine' the sampler "
                             "draws its own")
        if "lengths" in self.extras and self.level != "chain":
            raise ValueError("extras: 'lengths' (unequal chain lengths) applies to level='chain' only")
        check_vary(self.vary, self.extras, self.processing, self.inputs)
        if self.processing.needs_logits and self.inputs == "probs":
            raise ValueError("inputs: the repetition penalty depends on the logits' sign; audit it with "
                             "inputs='logits'")
        if self.processing.uses_history and "history" not in self.extras:
            raise ValueError("extras: penalties and min_tokens act on the tokens generated before; declare the "
                             "'history' extra")
        if self.q_layout not in Q_LAYOUTS or (self.q_layout == "parent" and self.level != "tree"):
            raise ValueError(f"q_layout: expected one of {', '.join(Q_LAYOUTS)} ('parent' at level='tree'), got "
                             f"{self.q_layout!r}")
        if self.drafting == "engine-wor" and self.level != "tree":
            raise ValueError("drafting: 'engine-wor' (siblings drawn without replacement) applies to level='tree'")
        if self.engine and self.q_layout != "paths":
            raise ValueError("q_layout: with engine drafting the sampler asks for q rows itself; leave it 'paths'")
        if "positions" in self.extras and not self.engine:
            raise ValueError("extras: 'positions' (the offset engine-owned randomness is keyed by) needs "
                             "drafting='engine'")
        if "lengths" in self.extras and self.engine:
            raise ValueError("extras: 'lengths' needs drafts the audit draws; with drafting='engine' every chain "
                             "has gamma drafts")
        if not 0 < self.time_limit < float("inf"):
            raise ValueError(f"time_limit: expected a positive number of seconds, got {self.time_limit!r}")

    @property
    def engine(self) -> bool:
        """Whether the sampler draws its own drafts."""
        return self.drafting in ENGINE_SCHEMES

    @property
    def depth(self) -> int:
        """Draft tokens along a path: 0 for a node (its candidates are siblings), gamma, len(branching)."""
        return {"node": 0, "chain": self.gamma, "tree": len(self.branching)}[self.level]

    @property
    def paths(self) -> int:
        return math.prod(self.branching)

    def describe(self) -> str:
        shape = {"node": f"k = {self.k}", "chain": f"gamma = {self.gamma}",
                 "tree": f"branching {','.join(map(str, self.branching))}"}[self.level]
        extras = f", extras {', '.join(self.extras)}" if self.extras else ""
        drafts = ", the sampler drafts" if self.engine else ""
        vary = f", rows vary {', '.join(self.vary)}" if self.vary else ""
        return (f"{self.level} ({shape}){drafts}, {self.arrays} {self.dtype} {self.inputs}, "
                f"{self.processing.describe()}{extras}{vary}")

    @property
    def needs_logits(self) -> bool:
        """Whether some row's claims depend on the logits' sign (the repetition penalty; ``models.logit_shift``)."""
        return needs_logits(self.processing, self.vary)


def as_inputs(probs: np.ndarray, contract: SamplerContract, offsets: np.ndarray, law: str = "p") -> Any:
    """``probs`` (float64, (B, ..., V)) of the target (``law="p"``) or the draft (``"q"``) as the sampler is handed
    them: logits ``log p + offset`` (one offset per row, (B,)) or probabilities, in the contract's dtype and array
    library."""
    values = probs
    if contract.inputs == "logits" or (contract.inputs == "target-logits" and law == "p"):
        with np.errstate(divide="ignore"):
            values = np.log(probs) + offsets.reshape((-1,) + (1,) * (probs.ndim - 1))
    values = np.ascontiguousarray(values, dtype=np.dtype(contract.dtype))
    return _to_library(values, contract)


def as_ids(ids: np.ndarray, contract: SamplerContract) -> Any:
    """A copy of ``ids`` as int64 in the contract's library (a sampler that writes into its drafts cannot change
    the drafts the audit checks its output against)."""
    return _to_library(np.array(ids, dtype=np.int64), contract)


def _to_library(values: np.ndarray, contract: SamplerContract) -> Any:
    if contract.arrays == "torch":
        import torch

        return torch.from_numpy(values)
    return values


def extra_arguments(contract: SamplerContract, seeds: list[int | None], lengths: np.ndarray | None,
                    call_seed: int, positions: np.ndarray | None = None, contexts: list[Any] = ()) -> dict[str, Any]:
    """The keyword arguments of the declared extras for one call (module doc); ``contexts`` are the rows'
    contexts (each with its ``history`` and ``processing``)."""
    extras: dict[str, Any] = {}
    if "history" in contract.extras:
        extras["history"] = [context.history for context in contexts]
    if "processing" in contract.extras:
        extras["processing"] = [context.processing for context in contexts]
    if "positions" in contract.extras:
        extras["positions"] = as_ids(positions, contract)
    if "seeds" in contract.extras:
        extras["seeds"] = list(seeds)
    if {"generators", "generator_map"} & set(contract.extras):
        import torch

        generators = [None if seed is None else torch.Generator().manual_seed(seed) for seed in seeds]
        if "generators" in contract.extras:
            extras["generators"] = generators
        if "generator_map" in contract.extras:
            extras["generator_map"] = {row: g for row, g in enumerate(generators) if g is not None}
    if "branching" in contract.extras:
        extras["branching"] = contract.branching
    if "lengths" in contract.extras:
        extras["lengths"] = as_ids(lengths, contract)
    if "rng" in contract.extras:
        if contract.arrays == "torch":
            import torch

            extras["rng"] = torch.Generator().manual_seed(call_seed)
        else:
            extras["rng"] = np.random.default_rng(call_seed)
    return extras


def call_sampler(fn: Callable[..., Any], contract: SamplerContract, arguments: tuple, extras: dict[str, Any],
                 expected: tuple[int, ...] | list[tuple[int, ...]], where: str) -> np.ndarray | list[np.ndarray]:
    """``fn(*arguments, **extras)`` under the time limit, its output read as int64 of shape ``expected`` (a list
    of shapes: a tuple of that many arrays, e.g. engine drafting's ``(out, drafts)``); ``SamplerError`` naming
    ``where`` (e.g. "call 3, 64 rows") otherwise."""
    try:
        out = _within_time_limit(lambda: fn(*arguments, **extras), contract.time_limit)
    except SamplerError as error:
        raise SamplerError(f"sampler: {error} ({where})") from None
    except Exception as error:  # the user's code: any exception is a finding about it, reported in one line
        message = " ".join(str(error).split()) or "no message"
        raise SamplerError(f"sampler: raised {type(error).__name__}: {message[:300]} ({where})") from None
    if isinstance(expected, list):
        if not isinstance(out, (tuple, list)) or len(out) != len(expected):
            raise SamplerError(f"sampler: returned {type(out).__name__}; expected a tuple of {len(expected)} integer "
                               f"arrays of shapes {', '.join(map(str, expected))} ({where})")
        return [read_output(part, shape, where) for part, shape in zip(out, expected)]
    return read_output(out, expected, where)


def read_output(out: Any, expected: tuple[int, ...], where: str) -> np.ndarray:
    """The sampler's output as an int64 NumPy array of shape ``expected``; ``SamplerError`` otherwise."""
    if type(out).__module__.startswith("torch"):
        out = out.detach().cpu().numpy()
    if not isinstance(out, np.ndarray):
        raise SamplerError(f"sampler: returned {type(out).__name__}; expected an integer array of shape "
                           f"{expected} ({where})")
    if out.dtype == np.bool_ or out.dtype.kind not in "iu":
        raise SamplerError(f"sampler: returned {out.dtype} values; expected integer token ids of shape "
                           f"{expected} ({where})")
    if out.shape != expected:
        raise SamplerError(f"sampler: returned shape {out.shape}; expected {expected} ({where})")
    return out.astype(np.int64)


def _within_time_limit(call: Callable[[], Any], seconds: float) -> Any:
    """``call()``, stopped after ``seconds``: by SIGALRM in the main thread (which interrupts Python code
    between bytecodes and after each C call), by a daemon thread joined with a timeout elsewhere (the call
    is then abandoned, not stopped)."""
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        def expire(signum, frame):
            raise SamplerError(f"did not return within the time limit of {seconds:g} s")

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return call()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as error:  # handed to the caller's thread below
            box["error"] = error

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise SamplerError(f"did not return within the time limit of {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def check_extras(fn: Callable[..., Any], extras: tuple[str, ...] | list[str], positional: int = 3) -> None:
    """``ValueError`` when ``fn`` requires a keyword of ``EXTRAS`` that is not declared ("declare --extras
    rng"), instead of the ``TypeError`` of its first call; silent where its signature cannot be read. The first
    ``positional`` parameters are the call's positional arguments (4 for a chain or tree drafting itself, whose
    last may be named ``branching``)."""
    try:
        parameters = dict(list(inspect.signature(fn).parameters.items())[positional:])
    except (TypeError, ValueError):
        return
    required = [name for name, parameter in parameters.items() if name in EXTRAS and name not in extras
                and parameter.default is inspect.Parameter.empty
                and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)]
    if required:
        raise ValueError(f"extras: the sampler takes {', '.join(required)}; declare --extras {' '.join(required)} "
                         f"(extras={required!r} in the API)")
