"""The verifier contract shared by every verifier, the simulator, the audits and the engine.

A verifier sees the target ``p`` and the draft ``q`` (shape (V,)) at one position and k candidates
``x_1..x_k`` drawn by its drafting scheme; it emits one token: an accepted candidate, or a draw from
a final residual. It is *exact* when the emitted token is distributed as ``p`` for every p, q, k.

Randomness convention (NumPy and torch agree decision for decision): a verification of k candidates
consumes ``uniforms_needed(k)`` uniforms. A sequential verifier takes ``k + 1``: ``u[i]`` decides
candidate i (accept iff ``u[i] < a_i``), ``u[k]`` draws the final residual by inverse CDF over token
ids in ascending order. A verifier that needs more overrides ``uniforms_needed`` and documents its
layout (``pooled``: ``2k + 2``).

Numerical convention (``resispec.residual``): no token with ``p(x) = 0`` is ever emitted. A
candidate the target forbids is accepted with probability 0, and the final residual is restricted to
the target's support; if rounding left it no mass there (the exact probability of reaching it is then
0, or below what float64 resolves), the token is drawn from ``p`` itself. ``conditional_law`` follows
the same rule, so the law errs by at most the mass rounding lost.
"""

from __future__ import annotations

import copy
import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Sequence
from types import ModuleType
from typing import Any, ClassVar

import numpy as np

from resispec.drafting import DRAFTING_SCHEMES, DraftingScheme
from resispec.enumeration import enumerate_law
from resispec.limits import MAX_DRAWN_CANDIDATES
from resispec.residual import supported_acceptance, supported_residual
from resispec.rows import Array, add_at_, device_of, float_errors_allowed, namespace, value_at
from resispec.sampling import inverse_cdf, inverse_cdf_rows
from resispec.validation import (
    as_candidates,
    as_count,
    as_distribution,
    as_generator,
    as_pair,
    as_uniform_rows,
    as_uniforms,
    raise_for_rows,
)

StepGenerator = Generator[float, None, np.ndarray]
"""Yields the acceptance probability ``a_i`` of candidate i given that candidates 1..i-1 were
rejected (resumed only after a rejection); returns the final residual weights (shape (V,),
unnormalised, non-negative) once all k candidates are rejected."""

ArrayLike = Sequence[float] | np.ndarray


class Verifier(ABC):
    """A multi-candidate verifier: drafting rule plus accept/reject rule.

    Class attributes: ``name``; ``drafting`` (``"iid"``, ``"wor"`` or ``"topk"``); ``claims_exact``
    (False for the known-biased controls); ``max_k`` (None: any k >= 1); ``single_candidate_is_sps``:
    with one candidate x ~ q the rule is single-draft speculative sampling (accept with
    ``min(1, p(x) / q(x))``, else draw from ``norm((p - q)+)``), as for every exact verifier of sampled
    candidates that reaches ``sum_x min(p, q)`` at k = 1 (its accepted mass at x is then min(p(x), q(x)),
    which fixes the residual); the engine then verifies chains as sps does (tests compare the laws).

    Facts the simulator and the engine read (the simulator's kernels stay in ``sim``, chosen by these):
    ``closed_form``: the simulator has exact closed-form step statistics given ``(p, q)`` alone, for
    ``k <= closed_form_max_k`` (None: every k), and enumerates or samples candidate tuples elsewhere;
    ``k_independent``: the rule at k' < k is the first k' steps of the rule at k (its step statistics at k'
    are those at k, truncated); ``single_step``: not sequential, one selection among the k candidates then
    one accept test (one step of statistics); ``drafts_rounds``: this verifier's drafting rule drafts the
    trees of the sequence-level verifiers with the same ``drafting`` (rrs for i.i.d. trees, rrs_wor for
    WOR ones); ``colour`` and ``marker``: how plots draw it (matplotlib names; None: not plotted).
    """

    name: ClassVar[str]
    drafting: ClassVar[str]
    claims_exact: ClassVar[bool]
    max_k: ClassVar[int | None] = None
    single_candidate_is_sps: ClassVar[bool] = False
    closed_form: ClassVar[bool] = False
    closed_form_max_k: ClassVar[int | None] = None
    k_independent: ClassVar[bool] = False
    single_step: ClassVar[bool] = False
    drafts_rounds: ClassVar[bool] = False
    colour: ClassVar[str | None] = None
    marker: ClassVar[str] = "o"

    @property
    def scheme(self) -> DraftingScheme:
        """The drafting scheme object named by ``drafting``."""
        return DRAFTING_SCHEMES[self.drafting]

    def uniforms_needed(self, k: int) -> int:
        """How many uniforms one verification of k candidates consumes (``k + 1`` unless overridden)."""
        return as_count(k) + 1

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, drafting={self.drafting!r}, "
                f"claims_exact={self.claims_exact})")

    # --- public contract: validate at the boundary, then delegate to a bound instance -----------

    def bind(self, p: ArrayLike, q: ArrayLike, k: int) -> BoundVerifier:
        """Validate ``(p, q, k)`` once and build the per-instance plan, reusable for many tuples."""
        p_array, q_array = as_pair(p, q)
        return self._bind_validated(p_array, q_array, k)

    def _bind_validated(self, p: np.ndarray, q: np.ndarray, k: int) -> BoundVerifier:
        k = as_count(k)
        self._check_count(q, k)
        return BoundVerifier(self, p, q, k, self._prepare(p, q, k))

    def _bind_for(self, p: ArrayLike, q: ArrayLike, candidates: Sequence[int] | np.ndarray) -> BoundVerifier:
        """Bind to ``(p, q)`` with k = the number of (validated) candidates."""
        p_array, q_array = as_pair(p, q)
        return self._bind_validated(p_array, q_array, as_candidates(candidates, p_array.size).size)

    def _check_count(self, q: np.ndarray, k: int) -> None:
        if self.max_k is not None and k > self.max_k:
            raise ValueError(f"k: {self.name} takes at most {self.max_k} candidate(s), got k = {k}")
        self.scheme.check_count(q, k)

    def draft(self, q: ArrayLike, k: int, rng: np.random.Generator) -> np.ndarray:
        """k candidate ids drawn from ``q`` by this verifier's drafting rule."""
        q_array = as_distribution(q, "q (draft)")
        k = as_count(k)
        self._check_count(q_array, k)
        return self.scheme.draft(q_array, k, as_generator(rng))

    def draft_probability(self, q: ArrayLike, candidates: Sequence[int] | np.ndarray) -> float:
        """Probability of the ordered tuple ``candidates`` under the drafting rule."""
        q_array = as_distribution(q, "q (draft)")
        return self.scheme.probability(q_array, as_candidates(candidates, q_array.size))

    def verify(self, p: ArrayLike, q: ArrayLike, candidates: Sequence[int] | np.ndarray,
               u: ArrayLike) -> tuple[int, int]:
        """Emit one token: ``(token, index)``, index = accepted position or -1 (final residual)."""
        return self._bind_for(p, q, candidates).verify(candidates, u)

    def verify_rng(self, p: ArrayLike, q: ArrayLike, candidates: Sequence[int] | np.ndarray,
                   rng: np.random.Generator) -> tuple[int, int]:
        """``verify`` with uniforms drawn from ``rng``."""
        return self._bind_for(p, q, candidates).verify_rng(candidates, as_generator(rng))

    def conditional_law(self, p: ArrayLike, q: ArrayLike, candidates: Sequence[int] | np.ndarray) -> np.ndarray:
        """Exact law of the emitted token given ``candidates`` (verification randomness integrated out)."""
        return self._bind_for(p, q, candidates).conditional_law(candidates)

    def acceptance(self, p: ArrayLike, q: ArrayLike, k: int) -> float:
        """Exact probability that one of the k drafted candidates is accepted."""
        return self.bind(p, q, k).acceptance()

    # --- hooks for concrete verifiers ------------------------------------------------------------

    def _prepare(self, p: np.ndarray, q: np.ndarray, k: int) -> Any:
        """Per-instance work shared by every candidate tuple (schedules, sorted profiles)."""
        return None

    @abstractmethod
    def _decide(self, bound: BoundVerifier, candidates: np.ndarray, u: np.ndarray) -> tuple[int, int]:
        """The emitted ``(token, index)`` for validated candidates and uniforms."""

    @abstractmethod
    def _law(self, bound: BoundVerifier, candidates: np.ndarray) -> tuple[np.ndarray, float]:
        """``(law, acceptance probability)`` given validated candidates."""

    def _laws_many(self, bound: BoundVerifier, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(laws (n, V), acceptance probabilities (n,))`` for validated candidate rows (n, k); default:
        ``_law`` row by row."""
        laws = [self._law(bound, row) for row in candidates]
        return np.array([law for law, _ in laws]).reshape(-1, bound.p.size), np.array([a for _, a in laws])

    def _decide_many(self, bound: BoundVerifier, candidates: np.ndarray,
                     u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(tokens, index)`` (n,) for validated candidate rows (n, k) and uniform rows; default: ``_decide``
        row by row."""
        decided = np.array([self._decide(bound, row, uniforms) for row, uniforms in zip(candidates, u)],
                           dtype=np.int64).reshape(-1, 2)
        return decided[:, 0], decided[:, 1]

    def _acceptance(self, bound: BoundVerifier) -> float:
        """Exact acceptance; default: enumeration of every candidate tuple (small V and k only)."""
        return enumerate_law(bound).acceptance


class SequentialVerifier(Verifier):
    """A verifier that examines candidates one at a time, then falls back to a final residual.

    Concrete classes implement ``_steps``; ``verify`` and ``conditional_law`` both run it, so the
    sampled decision and the integrated law come from one description of the rule:
    ``law = sum_i reach_i a_i delta(x_i) + reach_{k+1} norm(residual)``, with
    ``reach_{i+1} = reach_i (1 - a_i)``.
    """

    @abstractmethod
    def _steps(self, bound: BoundVerifier, candidates: np.ndarray) -> StepGenerator:
        """Acceptance probabilities step by step, then the final residual (see ``StepGenerator``)."""

    def _decide(self, bound: BoundVerifier, candidates: np.ndarray, u: np.ndarray) -> tuple[int, int]:
        steps = self._steps(bound, candidates)
        for index in range(candidates.size):
            if u[index] < supported_acceptance(next(steps), bound.p[candidates[index]]):
                return int(candidates[index]), index
        return inverse_cdf(supported_residual(_final_residual(steps), bound.p), u[candidates.size]), -1

    def _law(self, bound: BoundVerifier, candidates: np.ndarray) -> tuple[np.ndarray, float]:
        accepted, final, left = self._step_masses(bound, candidates)
        law = np.zeros(bound.p.size)
        np.add.at(law, candidates, accepted)  # in candidate order, as the steps run
        return law + final, 1.0 - left

    def _step_masses(self, bound: BoundVerifier, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """``(accepted, final, left)``: ``accepted[i] = reach_i a_i`` the probability that candidate i is
        the one emitted (shape (k,)), ``final = reach_{k+1} norm(residual)`` the output mass of the final
        residual (shape (V,)), ``left = reach_{k+1}``. Acceptances and the residual are restricted to p's
        support (``resispec.residual``: a residual left without mass falls back to p)."""
        accepted, final = np.zeros(candidates.size), np.zeros(bound.p.size)
        reach = 1.0
        steps = self._steps(bound, candidates)
        for index in range(candidates.size):
            acceptance = float(supported_acceptance(next(steps), bound.p[candidates[index]]))
            accepted[index] = reach * acceptance
            reach *= 1.0 - acceptance
            if reach == 0.0:
                return accepted, final, 0.0
        residual = supported_residual(_final_residual(steps), bound.p)
        return accepted, reach * (residual / residual.sum()), reach


ROW_BUDGET = 1 << 20
"""Most entries of the (rows, V) copies of ``p`` and ``q`` that one batched chunk of ``verify_many`` holds."""

RowStepGenerator = Generator[Array, Array | None, Array]
"""Yields ``a_i`` (B,) for every row, then returns the final residual weights (B, V), unnormalised and
non-negative. Each resume receives the rows still undecided (bool (B,): every candidate so far
rejected) or None (every row); a row that is decided, or accepts for sure (``a_i = 1``), is never
read again and may hold anything, NaN included."""


class BatchedSequentialVerifier(SequentialVerifier):
    """A sequential verifier whose rule is written once over rows, for NumPy and torch alike.

    ``_row_steps(p, q, candidates, plan)`` states the rule for B instances at once with the array API
    (``resispec.rows``): ``p``, ``q`` (B, V) float64, candidates (B, k); ``_row_plan(p, q, k)`` the
    per-instance work, batched. This class runs them at B = 1 for the single-instance API (``verify``,
    ``conditional_law``, ``bind``, ...); the engine runs the same two methods on (B, V) tensors
    (``resispec.engine.verifiers.base.TorchVerifier``).
    """

    def _row_plan(self, p: Array, q: Array, k: int) -> Any:
        """Per-row work shared by every candidate tuple (B rows at once); none by default."""
        return None

    @abstractmethod
    def _row_steps(self, p: Array, q: Array, candidates: Array, plan: Any) -> RowStepGenerator:
        """The rule for B rows: acceptance probabilities step by step, then the final residuals."""

    def _prepare(self, p: np.ndarray, q: np.ndarray, k: int) -> Any:
        return self._row_plan(p[None], q[None], k)

    def _decide_many(self, bound: BoundVerifier, candidates: np.ndarray,
                     u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All n tuples as rows of one batched run of the rule (``row_decisions``, ``in_row_chunks``)."""
        return in_row_chunks(bound, candidates, lambda rows, p, q, plan: row_decisions(
            self._row_steps(p, q, candidates[rows], plan), p, candidates[rows], u[rows]))

    def _laws_many(self, bound: BoundVerifier, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All n conditional laws as rows of one batched run of the rule (``row_laws``, ``in_row_chunks``)."""
        return in_row_chunks(bound, candidates, lambda rows, p, q, plan: row_laws(
            self._row_steps(p, q, candidates[rows], plan), p, candidates[rows]))

    def _steps(self, bound: BoundVerifier, candidates: np.ndarray) -> StepGenerator:
        steps = self._row_steps(bound.p[None], bound.q[None], candidates[None], bound.plan)
        acceptance = next(steps)
        for _ in range(candidates.size - 1):
            yield float(acceptance[0])
            acceptance = steps.send(None)
        yield float(acceptance[0])
        return _final_residual(steps)[0]


def in_row_chunks(bound: BoundVerifier, candidates: np.ndarray,
                  run: Callable[[slice, np.ndarray, np.ndarray, Any], tuple[Array, ...]]) -> tuple[np.ndarray, ...]:
    """``run(rows, p, q, plan)`` over the n candidate rows in chunks, each on copies of the bound ``p``, ``q``
    (count, V) and its plan repeated (``repeat_rows``), at most ``ROW_BUDGET`` entries of (count, V) each;
    the outputs of the chunks concatenated along their first axis."""
    step, n = max(1, ROW_BUDGET // bound.p.size), len(candidates)
    chunks = [run(slice(start, min(start + step, n)), *(np.repeat(x[None], min(step, n - start), axis=0)
                                                        for x in (bound.p, bound.q)),
                  repeat_rows(bound.plan, min(step, n - start))) for start in range(0, n, step)]
    return tuple(np.concatenate(part) for part in zip(*chunks))


def row_laws(steps: RowStepGenerator, p: Array, candidates: Array) -> tuple[Array, Array]:
    """``(laws (B, V), acceptance probabilities (B,))`` of B rows of a sequential rule, the verification
    randomness integrated out: ``law = sum_i reach_i a_i delta(x_i) + reach_{k+1} norm(residual)`` with
    ``reach_{i+1} = reach_i (1 - a_i)``; acceptance ``1 - reach_{k+1}``. Acceptances and the residual
    are restricted to p's support, as in the decisions. A row no longer reached (``reach = 0``, after a
    sure acceptance) takes nothing more, whatever its later steps hold. Row for row
    ``SequentialVerifier._law``.
    """
    xp = namespace(p, candidates)
    reach = xp.ones((p.shape[0],), dtype=p.dtype, device=device_of(p))
    laws = xp.zeros(p.shape, dtype=p.dtype, device=device_of(p))
    reached = None
    for i in range(candidates.shape[1]):
        acceptance = supported_acceptance(steps.send(reached), value_at(p, candidates[:, i]))
        add_at_(laws, candidates[:, i:i + 1], xp.where(reach > 0, reach * acceptance, 0.0)[:, None])
        reach = xp.where(reach > 0, reach * (1.0 - acceptance), 0.0)
        reached = reach > 0
    residual = supported_residual(_final_residual(steps, reached), p)
    with float_errors_allowed(residual):  # a row no longer reached may hold anything: masked below
        final = reach[:, None] * (residual / xp.sum(residual, axis=-1, keepdims=True))
    return laws + xp.where(reached[:, None], final, 0.0), 1.0 - reach


def repeat_rows(plan: Any, rows: int) -> Any:
    """A one-row plan (``_row_plan`` at B = 1) for ``rows`` copies of its row: every array of the plan
    (first axis of length 1) repeated along that axis, through tuples, dicts, dataclasses and plain objects
    (a copy with their attributes repeated, e.g. ``RowInverseCDF``); a one-item list (one per row) becomes
    ``rows`` items; anything else (numbers, namespaces) as is."""
    if isinstance(plan, np.ndarray) and plan.ndim >= 1:
        return np.repeat(plan, rows, axis=0)
    if dataclasses.is_dataclass(plan) and not isinstance(plan, type):
        return dataclasses.replace(plan, **{field.name: repeat_rows(getattr(plan, field.name), rows)
                                            for field in dataclasses.fields(plan) if field.init})
    if isinstance(plan, tuple):
        repeated = [repeat_rows(item, rows) for item in plan]
        return type(plan)(*repeated) if hasattr(plan, "_fields") else tuple(repeated)
    if isinstance(plan, dict):
        return {key: repeat_rows(value, rows) for key, value in plan.items()}
    if isinstance(plan, list) and len(plan) == 1:
        return plan * rows
    if hasattr(plan, "__dict__") and not isinstance(plan, (type, ModuleType)):
        repeated = copy.copy(plan)
        vars(repeated).update({name: repeat_rows(value, rows) for name, value in vars(plan).items()})
        return repeated
    return plan


def row_decisions(steps: RowStepGenerator, p: Array, candidates: Array, u: Array) -> tuple[Array, Array]:
    """``(tokens (B,), index (B,))`` int64 emitted by B rows of a sequential rule, the decision loop of the
    randomness convention written once over rows (NumPy or torch, no host synchronisation).

    A loop over the k steps (never over rows or tokens), telling ``steps`` after each step which rows
    are still undecided: row b emits its first candidate i with ``u[b, i] < a_i[b]`` (0 where
    ``p(x_i) = 0``); if none, ``inverse_cdf(residual[b], u[b, k])`` over the residual restricted to p's
    support, or over p where rounding left it no mass (``supported_residual``). ``index`` is the accepted
    position, -1 for the final residual. Row for row the decision of ``SequentialVerifier._decide``.
    """
    xp = namespace(p, candidates)
    k = candidates.shape[1]
    first = xp.full((candidates.shape[0],), k, dtype=xp.int64, device=device_of(candidates))
    undecided = None
    for i in range(k):
        hit = u[:, i] < supported_acceptance(steps.send(undecided), value_at(p, candidates[:, i]))
        first = xp.where(hit & (first == k), i, first)
        undecided = first == k
    drawn = inverse_cdf_rows(supported_residual(_final_residual(steps, undecided), p), u[:, k])
    index = xp.where(first < k, first, -1)
    tokens = xp.where(index >= 0, value_at(candidates, xp.where(index >= 0, index, 0)), drawn)
    return tokens, index


def _final_residual(steps: Generator[Any, Any, Any], sent: Any = None) -> Any:
    """Resume the step generator after its k-th rejection to obtain its return value, the residual.

    ``sent`` is what the resumed ``yield`` evaluates to (None, as with ``next``; the torch
    verifiers send the mask of the nodes still undecided).
    """
    try:
        steps.send(sent)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("a verifier's step generator yielded more acceptance probabilities than candidates")


class BoundVerifier:
    """A verifier bound to one validated ``(p, q, k)`` and its precomputed plan.

    Audits, the simulator and benchmarks use it to verify many tuples of one instance without
    re-validating and re-planning; every method still validates its own candidates and uniforms.
    """

    def __init__(self, verifier: Verifier, p: np.ndarray, q: np.ndarray, k: int, plan: Any) -> None:
        self.verifier = verifier
        self.p = p
        self.q = q
        self.k = k
        self.plan = plan

    def _candidates(self, candidates: Sequence[int] | np.ndarray) -> np.ndarray:
        array = as_candidates(candidates, self.p.size)
        if array.size != self.k:
            raise ValueError(f"candidates: expected {self.k} candidates for this instance, got {array.size}")
        self.verifier.scheme.check_candidates(self.q, array)
        return array

    def draft(self, rng: np.random.Generator) -> np.ndarray:
        """k candidates drawn from ``q`` by the verifier's drafting rule."""
        return self.verifier.scheme.draft(self.q, self.k, as_generator(rng))

    def draft_probability(self, candidates: Sequence[int] | np.ndarray) -> float:
        """Probability of the ordered tuple under the drafting rule."""
        return self.verifier.scheme.probability(self.q, as_candidates(candidates, self.p.size))

    def verify(self, candidates: Sequence[int] | np.ndarray, u: ArrayLike) -> tuple[int, int]:
        """``(token, index)`` emitted for these candidates and uniforms."""
        array = self._candidates(candidates)
        return self.verifier._decide(self, array, as_uniforms(u, self.verifier.uniforms_needed(self.k)))

    def verify_rng(self, candidates: Sequence[int] | np.ndarray, rng: np.random.Generator) -> tuple[int, int]:
        """``verify`` with uniforms drawn from ``rng``."""
        return self.verify(candidates, as_generator(rng).random(self.verifier.uniforms_needed(self.k)))

    def verify_many(self, candidates: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(tokens (n,), index (n,))`` int64 for n tuples, the rows of ``candidates`` (n, k), and their
        uniforms ``u`` (n, uniforms_needed(k)): row i is ``verify(candidates[i], u[i])``.

        A rule written over rows runs all n at once (``row_decisions``); its inverse-CDF draws then use a
        plain cumulative sum, so above V = 1024 (where ``verify`` sums by blocks) a draw can differ only
        where ``u`` lies within rounding of a boundary.
        """
        rows = self._candidate_rows(candidates)
        uniforms = as_uniform_rows(u, rows.shape[0], self.verifier.uniforms_needed(self.k))
        return self.verifier._decide_many(self, rows, uniforms)

    def draft_and_verify(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """n samples of the whole step, ``(tokens (n,), index (n,))``: each drafts k candidates, then its
        uniforms, from ``rng`` in that order (the stream of n ``verify_rng(draft(rng), rng)`` calls); the
        n verifications run as one ``verify_many``."""
        n = as_count(n, "n", "samples")
        if n * self.k > MAX_DRAWN_CANDIDATES:
            raise ValueError(f"n: {n} samples of k = {self.k} candidates draw {n * self.k} candidates, more than "
                             f"MAX_DRAWN_CANDIDATES = {MAX_DRAWN_CANDIDATES} (resispec.limits); call again for more")
        candidates, u = self.verifier.scheme.draft_rows(self.q, self.k, n,
                                                        self.verifier.uniforms_needed(self.k), as_generator(rng))
        return self.verify_many(candidates, u)

    def _candidate_rows(self, candidates: np.ndarray) -> np.ndarray:
        """Validated candidate rows (n, k), int64; a bad row is re-checked alone, the error names it."""
        array = np.asarray(candidates)
        if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] != self.k:
            raise ValueError(f"candidates: expected a non-empty (n, {self.k}) array of candidate rows for this "
                             f"instance, got shape {array.shape}")
        if not np.issubdtype(array.dtype, np.integer):
            raise ValueError(f"candidates: token ids must be integers, got dtype {array.dtype}")
        array = array.astype(np.int64)
        bad = ((array < 0) | (array >= self.p.size)).any(axis=1)
        bad |= self.verifier.scheme.impossible_rows(self.q, np.where(bad[:, None], 0, array))
        raise_for_rows(bad, lambda row: self._candidates(array[row]))
        return array

    def conditional_law(self, candidates: Sequence[int] | np.ndarray) -> np.ndarray:
        """Exact law of the emitted token given these candidates."""
        return self.verifier._law(self, self._candidates(candidates))[0]

    def conditional_laws(self, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(laws (n, V), acceptance probabilities (n,))`` for n tuples, the rows of ``candidates`` (n, k):
        row i is ``conditional_law(candidates[i])`` and ``accept_probability(candidates[i])``, computed as
        rows of one batched call where the rule is written over rows."""
        return self.verifier._laws_many(self, self._candidate_rows(candidates))

    def step_masses(self, candidates: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """A sequential verifier's law given these candidates, step by step: ``(accepted, final, left)``
        with ``law = sum_i accepted[i] delta(x_i) + final`` (``SequentialVerifier._step_masses``);
        ``ValueError`` for a verifier that is not sequential."""
        if not isinstance(self.verifier, SequentialVerifier):
            raise ValueError(f"verifier: {self.verifier.name} is not sequential; it has no per-candidate steps")
        return self.verifier._step_masses(self, self._candidates(candidates))

    def accept_probability(self, candidates: Sequence[int] | np.ndarray) -> float:
        """Probability that one of these candidates is accepted."""
        return self.verifier._law(self, self._candidates(candidates))[1]

    def acceptance(self) -> float:
        """Exact acceptance probability averaged over the drafting rule."""
        return self.verifier._acceptance(self)
