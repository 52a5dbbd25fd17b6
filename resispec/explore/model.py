"""The explorer's model: a state (p, q, k, the selected verifiers, a seed) -> every number on screen.

Pure functions, no widgets. Every number comes from the toolkit's own exact functions:

- the output law and its error (``law = sum_xbar P(xbar) law(. | xbar)``, ``max_error = max_y |law(y) -
  p(y)|``), enumerated when the drafting rule has at most ``law_limit`` candidate tuples (the cost grows
  like ``support(q) ** k``): ``resispec.enumeration.enumerate_steps`` for a sequential verifier, which
  also gives the residuals, ``resispec.audit.exact_law`` for the others;
- the residual after i - 1 rejections: the law of the output given that candidates 1..i-1 were
  rejected (``StepLaws.residual``; for rrs and resispec the residual target ``r_i`` itself);
- the drift curve ``c_i = P(candidate i accepted | 1..i-1 rejected)`` and the residual drift
  ``TV(r_i, s_i)`` (``r_i`` the residual target after i - 1 rejections, ``s_i`` the proposal of
  candidate i): the simulator's kernels, ``resispec.sim.step_stats`` on a one-pair batch (verifiers in
  ``sim.SUPPORTED`` only);
- the acceptance: the enumerated law's, else the simulator's;
- the optima: ``alpha* = resispec.bounds.optimal_acceptance`` (i.i.d.), alpha*-WOR by
  ``resispec.sim.optima.alpha_star_wor`` (transport LP, or the ratio-prefix upper bound on larger instances),
  the top-k optimum ``p(top-k of q)``;
- one live draw: the verifier's own ``draft`` and ``verify`` with a seeded generator, and the exact
  ``conditional_law`` given the drawn candidates.

Verifiers come from the registry ``resispec.VERIFIERS`` (a verifier added there appears here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from resispec import VERIFIERS, get_verifier
from resispec.audit.exact import EXACT_TOLERANCE, exact_law
from resispec.bounds import optimal_acceptance
from resispec.enumeration import enumerate_steps
from resispec.sim import SUPPORTED, MonteCarlo, PairBatch, step_stats
from resispec.sim.optima import WorSettings, alpha_star_wor, support_capped
from resispec.verifiers import SequentialVerifier

MAX_VOCAB = 16
MAX_K = 6
LAW_LIMIT = 256
"""Default ceiling on the candidate tuples one exact-law enumeration may visit (keeps a redraw fast)."""
MONTE_CARLO = MonteCarlo(samples=128, enumeration_limit=LAW_LIMIT)
"""The simulator's settings here: tuples enumerated up to ``LAW_LIMIT``, else 128 sampled tuples (or
rejection paths) per verifier."""


@dataclass(frozen=True)
class Edit:
    """A validated distribution typed or dragged by the user, and what was done to it (``note``)."""

    values: np.ndarray
    note: str


def edited_distribution(values: Sequence[float] | np.ndarray, name: str) -> Edit:
    """``values / sum(values)``, refusing what is not a distribution up to scale.

    ``ValueError`` naming ``name`` for: not 1-D numbers, fewer than 2 or more than ``MAX_VOCAB``
    entries, NaN or inf, a negative entry, or all zeros. ``note`` says when the values were
    renormalised (their sum was not 1 to 1e-12).
    """
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected numbers, got {values!r}") from None
    if array.ndim != 1 or not 2 <= array.size <= MAX_VOCAB:
        raise ValueError(f"{name}: expected 2 to {MAX_VOCAB} probabilities, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name}: entry {int(np.flatnonzero(~np.isfinite(array))[0])} is not a finite number")
    if (array < 0).any():
        index = int(np.flatnonzero(array < 0)[0])
        raise ValueError(f"{name}: entry {index} is negative ({array[index]:g}); probabilities must be >= 0")
    total = float(array.sum())
    if total <= 0:
        raise ValueError(f"{name}: all entries are zero; give some token positive mass")
    note = "" if abs(total - 1.0) <= 1e-12 else f"{name}: renormalised (the values summed to {total:.6g})"
    return Edit(array / total, note)


@dataclass(frozen=True)
class State:
    """What the user set: the pair, k, the verifiers shown, the seed of the live draw, the labels of
    the tokens and the enumeration ceiling of the exact law."""

    p: np.ndarray
    q: np.ndarray
    k: int
    verifiers: tuple[str, ...] = tuple(VERIFIERS)
    seed: int = 0
    labels: tuple[str, ...] = ()
    law_limit: int = LAW_LIMIT

    def __post_init__(self) -> None:
        for attribute, name in (("p", "p (target)"), ("q", "q (draft)")):
            values = getattr(self, attribute)
            edited_distribution(values, name)
            object.__setattr__(self, attribute, np.asarray(values, dtype=np.float64))  # lists are taken too
        if self.p.shape != self.q.shape:
            raise ValueError(f"p (target) and q (draft) have different sizes: {self.p.size} != {self.q.size}")
        if isinstance(self.k, bool) or not isinstance(self.k, (int, np.integer)) or not 1 <= self.k <= MAX_K:
            raise ValueError(f"k: expected an integer in 1..{MAX_K}, got {self.k!r}")
        unknown = [name for name in self.verifiers if name not in VERIFIERS]
        if unknown:
            raise ValueError(f"verifiers: unknown {', '.join(unknown)}; known: {', '.join(VERIFIERS)}")
        if self.labels and len(self.labels) != self.p.size:
            raise ValueError(f"labels: expected {self.p.size} labels, got {len(self.labels)}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ValueError(f"seed: expected a non-negative integer, got {self.seed!r}")

    @property
    def token_labels(self) -> tuple[str, ...]:
        return self.labels or tuple(str(token) for token in range(self.p.size))


@dataclass(frozen=True)
class Draw:
    """One live verification: candidates, uniforms, the emitted token and the accepted position
    (-1: every candidate rejected, the token drawn from the final residual), and the exact law of
    the output given these candidates."""

    candidates: np.ndarray
    uniforms: np.ndarray
    token: int
    index: int
    conditional_law: np.ndarray

    def path(self, labels: Sequence[str]) -> str:
        """The decisions in words, e.g. ``x1 = 0 rejected, x2 = 2 accepted -> 2``."""
        steps = []
        for position, candidate in enumerate(self.candidates):
            accepted = position == self.index
            steps.append(f"x{position + 1} = {labels[candidate]} {'accepted' if accepted else 'rejected'}")
            if accepted:
                break
        if self.index < 0:
            steps.append("final residual")
        return ", ".join(steps) + f" -> {labels[self.token]}"


@dataclass(frozen=True)
class VerifierNumbers:
    """Everything shown for one verifier. ``refused`` holds the verifier's own error when it cannot
    run on this (q, k) (e.g. sps takes one candidate); then every other field is empty."""

    name: str
    claims_exact: bool
    drafting: str
    refused: str = ""
    acceptance: float | None = None
    optimum: float | None = None
    law: np.ndarray | None = None
    max_error: float | None = None
    law_note: str = ""
    residuals: list[np.ndarray] = field(default_factory=list)
    reached: list[float] = field(default_factory=list)
    drift: list[float] = field(default_factory=list)
    residual_tv: list[float] = field(default_factory=list)
    drift_method: str = ""
    draw: Draw | None = None

    @property
    def biased(self) -> bool:
        """True when the enumerated law misses p by more than the exactness tolerance (1e-12)."""
        return self.max_error is not None and self.max_error > EXACT_TOLERANCE


@dataclass(frozen=True)
class Bounds:
    """The acceptance optima at k: i.i.d. ``alpha*``, WOR (``wor_method`` says how it was obtained) and top-k."""

    iid: float
    wor: float
    wor_method: str
    topk: float

    def for_drafting(self, drafting: str) -> float:
        return {"iid": self.iid, "wor": self.wor, "topk": self.topk}[drafting]


@dataclass(frozen=True)
class Display:
    """The numbers of one state: the optima and one ``VerifierNumbers`` per selected verifier."""

    state: State
    bounds: Bounds
    verifiers: list[VerifierNumbers]


WOR_ROUTES = {"lp": "transport LP (exact)", "prefix": "ratio-prefix bound (upper bound)"}


def bounds(p: np.ndarray, q: np.ndarray, k: int) -> Bounds:
    """The optima at k (WOR and top-k with k capped at q's support)."""
    wor, _, route = alpha_star_wor(p, q, k, WorSettings())
    return Bounds(optimal_acceptance(p, q, k), wor, WOR_ROUTES[route],
                  optimal_acceptance(p, q, support_capped(q, k), "topk"))


def draw(name: str, p: np.ndarray, q: np.ndarray, k: int, seed: int) -> Draw:
    """One draft-and-verify of ``name`` from the generator seeded by ``(seed, name)``."""
    verifier = get_verifier(name)
    rng = np.random.default_rng([seed, *name.encode()])
    candidates = verifier.draft(q, k, rng)
    uniforms = rng.random(verifier.uniforms_needed(k))
    token, index = verifier.verify(p, q, candidates, uniforms)
    return Draw(candidates, uniforms, token, index, verifier.conditional_law(p, q, candidates))


def verifier_numbers(name: str, state: State, best: Bounds) -> VerifierNumbers:
    """The numbers of one verifier on ``state`` (see the module docstring for where each comes from).
    Remembered for the last ``CACHE_SIZE`` inputs, so toggling a verifier recomputes only that one."""
    return _numbers(name, state.p.tobytes(), state.q.tobytes(), state.k, state.seed, state.law_limit, best)


CACHE_SIZE = 256


def forget() -> None:
    """Drop the remembered numbers (a benchmark times edits that change the pair)."""
    _numbers.cache_clear()


@lru_cache(maxsize=CACHE_SIZE)
def _numbers(name: str, p_bytes: bytes, q_bytes: bytes, k: int, seed: int, law_limit: int,
             best: Bounds) -> VerifierNumbers:
    verifier = get_verifier(name)
    base = dict(name=name, claims_exact=verifier.claims_exact, drafting=verifier.drafting)
    p, q = np.frombuffer(p_bytes), np.frombuffer(q_bytes)
    try:
        verifier.bind(p, q, k)
    except ValueError as error:
        return VerifierNumbers(**base, refused=str(error))
    numbers: dict = dict(optimum=best.for_drafting(verifier.drafting))
    tuples = verifier.scheme.tuple_count(q, k)
    if tuples <= law_limit and isinstance(verifier, SequentialVerifier):
        steps = enumerate_steps(verifier.bind(p, q, k), law_limit)
        numbers.update(law=steps.law, max_error=float(np.abs(steps.law - p).max()),
                       acceptance=float(steps.accepted.sum()), reached=[float(value) for value in steps.reached[:k]],
                       residuals=[steps.residual(step) for step in range(1, k + 1)])
    elif tuples <= law_limit:
        law = exact_law(verifier, p, q, k, max_tuples=law_limit)
        numbers.update(law=law.law, max_error=law.max_error, acceptance=law.acceptance)
    else:
        numbers["law_note"] = f"not enumerated: {tuples} candidate tuples > {law_limit}"
    if name in SUPPORTED:
        stats = step_stats(name, PairBatch.from_arrays(p[None], q[None]), k,
                           np.random.default_rng([seed, *name.encode()]), MONTE_CARLO)
        numbers.update(drift=[estimate.value for estimate in stats.drift_curve()],
                       residual_tv=[estimate.value for estimate in stats.residual_curve()],
                       drift_method=stats.method)
        numbers.setdefault("acceptance", float(stats.acceptance[0]))
    numbers["draw"] = draw(name, p, q, k, seed)
    return VerifierNumbers(**base, **numbers)


def display(state: State) -> Display:
    """Every number on screen for ``state``."""
    best = bounds(state.p, state.q, state.k)
    return Display(state, best, [verifier_numbers(name, state, best) for name in state.verifiers])
