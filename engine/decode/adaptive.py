"""The online cost model: the decoder re-decides the round's shape (plain, chain or tree) from its own rounds.

A cached calibration (`resispec.engine.decode.calibration`) is measured once, maybe on a machine as it was an hour
ago (another job's load, another thread count). `OnlineShapes` starts from it as a prior and, as the decoder
runs, measures every round it decodes (`resispec.engine.decode.decoding.RoundRecord`):

- **target forward by row count**: ``t(n)`` per n seen, the median of the last ``RECENT`` (`Recent`: a stall of a
  loaded machine moves no estimate alone);
  an n not seen is the prior's ``t(n)`` times the measured/prior ratio at the nearest n seen (in log n);
- **draft, verification**: the prior's curves times one measured/prior ratio each, running medians (the round's
  draft seconds against ``sum_d c(w_d)`` over its fed levels, its verification seconds against ``sum_d u(b_d)``);
  the first round after plain tokens is left out of the ratios and rates (the draft then catches up on the tokens
  it was only told, `resispec.engine.runtime.tree_lm`, or restarts on the target's cache);
- **what the loop adds**: ``v`` = round seconds minus its forwards and verification, ``v_plain`` = plain token
  seconds minus its forward, running medians started at the prior's (a round is timed from its shape's choice on,
  so the decision's own search is charged to no shape);
- **acceptance**: one ratio ``rho`` of observed to predicted rejections, ``1 - A(k) = rho (1 - A_prior(k))``.
  A node of depth d with k candidates that the walk reached is predicted to accept with probability
  ``min(1, A_prior(k) kappa_d / kappa_{d-1})`` (the calibration's survival correlation, so that deeper nodes,
  reached on easy stretches, are not read as a higher acceptance); ``rho`` counts both sides with a forgetting
  factor ``ACCEPTANCE_MEMORY`` and ``PRIOR_NODES`` pseudo-nodes at rho = 1.

Every ``DECIDE_EVERY`` rounds the estimates become a `Calibration` and its ``choose(plain=True)`` (i.e.
`resispec.engine.decode.tree_search.best_tree`'s rule) picks the next shape. On top, a **guard** on measured rates
alone: while speculating, a plain token every ``PLAIN_CHECK_EVERY`` rounds keeps the plain rate measured, and when
the last speculative rounds' tokens per second fall below the last plain tokens', the decoder goes plain. While
plain, it **probes** now and then: after ``FIRST_PROBE`` plain tokens it decodes ``PROBE_ROUNDS`` rounds of the best
speculative shape and decides again. A probe that loses is paid for: its measured extra seconds (its rounds'
seconds minus its tokens at the measured plain rate; the draft's catch-up on the plain tokens included) set the
next gap to at least ``extra / (PROBE_BUDGET * a plain token's seconds)`` plain tokens, so that probes cost at most
``PROBE_BUDGET`` of plain decoding; the gap also doubles after each lost probe, up to ``LONGEST_GAP``.

Exactness: a shape is decided before its round from past rounds only (tokens already emitted and clocks), never
from the round's own draws, and each round of any shape emits tokens with the target's sequential law given
everything before it; so the emitted sequence has the target's law whatever the schedule (docs/draft.md,
"Adaptive shapes").
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Sequence
from datetime import datetime, timezone

from resispec.engine.decode.calibration import COST_POINTS, Calibration, load_average
from resispec.engine.decode.decoding import RoundRecord, ShapeChanges
from resispec.engine.decode.tree_search import TreeChoice

PLAIN: tuple[int, ...] = ()
DECIDE_EVERY = 8
"""Rounds between two decisions of the shape."""
RECENT = 9
"""Measurements in each running median of a cost (`Recent`)."""
ACCEPTANCE_MEMORY = 0.97
"""Forgetting factor per verified node of the rejection counts (about 30 nodes of memory)."""
PRIOR_NODES = 8.0
"""Pseudo-nodes at the prior's acceptance (rho = 1) in the rejection counts."""
RATE_WINDOW = 8
MIN_RATE_ROUNDS = 4
"""Rounds in each measured rate of the guard (speculative rounds; plain tokens): the last ``RATE_WINDOW``, a rate
only from ``MIN_RATE_ROUNDS`` on."""
PLAIN_CHECK_EVERY = 32
"""While speculating, one plain token every this many rounds keeps the plain rate measured (every third round
while fewer than ``MIN_RATE_ROUNDS`` plain tokens were measured)."""
FIRST_PROBE = 32
LONGEST_GAP = 256
"""Plain tokens before the first probe of speculation, and the most between two probes (the gap doubles)."""
PROBE_ROUNDS = 5
"""Rounds of a probe (its first, where the draft catches up, is not in the measured rate)."""
PROBE_BUDGET = 0.025
"""The share of plain decoding time that lost probes may cost (module docstring): measured on the 2-core Xeon, a
lost probe of a chain of one cost about 6 plain tokens (0.11 s, most of it the draft's catch-up), so a gap of 32
lost 8 % of a 64-token generation."""
FAR_OFF = 2.0
"""A calibration whose target forward is off by more than this factor (either way) at a row count measured
``FAR_OFF_ROUNDS`` times is far off (`OnlineShapes.far_off`)."""
FAR_OFF_ROUNDS = 8


def fed_widths(branching: Sequence[int]) -> list[int]:
    """Rows the draft feeds per level: ``w_0 = 1``, ``w_d = prod_{j <= d} b_j``, leaves never fed."""
    widths = [1]
    for children in branching[:-1]:
        widths.append(widths[-1] * children)
    return widths


class Recent:
    """The median of the last ``RECENT`` measurements of a cost; ``start`` (the prior's) counts as one until
    ``RECENT`` others came."""

    def __init__(self, start: float | None = None) -> None:
        self.values: deque[float] = deque([] if start is None else [start], maxlen=RECENT)
        self.count = 0

    def add(self, value: float) -> None:
        self.values.append(value)
        self.count += 1

    @property
    def value(self) -> float:
        return statistics.median(self.values)


class OnlineShapes:
    """The decoder's shape policy from its own measurements, ``prior`` first (module docstring).

    Args:
        prior: the cached calibration (costs and acceptance of this target, draft, verifier and sampling).
        chains_only: only chains compete (a verifier of chains).
    """

    def __init__(self, prior: Calibration, chains_only: bool = False) -> None:
        self.prior = prior
        self.chains_only = chains_only
        self.target_seconds: dict[int, Recent] = {}
        self.draft_ratio, self.verify_ratio = Recent(1.0), Recent(1.0)
        self.loop_seconds, self.plain_loop_seconds = Recent(prior.round_seconds), Recent(prior.plain_round_seconds)
        self.rejected, self.expected_rejected = PRIOR_NODES, PRIOR_NODES
        self.speculative_rates: deque[tuple[int, float]] = deque(maxlen=RATE_WINDOW)
        self.plain_rates: deque[tuple[int, float]] = deque(maxlen=RATE_WINDOW)
        self.changes = ShapeChanges()
        """Changes of shape: ``at_token`` (tokens emitted before), ``branching`` (``[]``: plain), ``reason``; the
        first and last ``KEPT_CHANGES`` kept (`ShapeChanges`)."""
        self.shape: tuple[int, ...] | None = None
        self._rounds_left = 0  # rounds of the current shape before the next decision
        self._rounds = 0  # rounds since the start
        self._gap = FIRST_PROBE  # plain tokens before the next probe
        self._probing = False
        self._probe_tokens, self._probe_seconds = 0, 0.0  # the current probe's, all its rounds
        self._after_plain = False  # the last round was plain: the draft catches up in the next

    # -- what the decoder calls -------------------------------------------------------------------------------

    def next_shape(self, emitted: int, context: Sequence[int] = ()) -> tuple[int, ...]:
        """The shape of the next round (``()`` for plain), ``emitted`` tokens into the generation (a function of the
        past rounds' measurements; ``context`` is not read)."""
        if self.shape is None:
            choice = self.prior.choose(chains_only=self.chains_only, plain=True)
            self._set(emitted, choice.branching, f"calibration: {_predicted(choice)}",
                      rounds=self._gap if choice.branching == PLAIN else DECIDE_EVERY)
        elif self._rounds_left <= 0:
            self._decide(emitted)
        self._rounds_left -= 1
        self._rounds += 1
        check_every = PLAIN_CHECK_EVERY if len(self.plain_rates) >= MIN_RATE_ROUNDS else 3
        if self.shape != PLAIN and not self._probing and self._rounds % check_every == 0:
            return PLAIN  # a plain token to keep the plain rate measured (the guard)
        return self.shape

    def observe(self, record: RoundRecord) -> None:
        """Fold one round's measurements into the estimates."""
        rows = record.target_rows
        self.target_seconds.setdefault(rows, Recent()).add(record.target_seconds)
        forwards = record.seconds - record.target_seconds
        if not record.branching:
            self.plain_loop_seconds.add(max(forwards - record.verify_seconds, 0.0))
            self.plain_rates.append((record.tokens, record.seconds))
            self._after_plain = True
            return
        if self._probing:
            self._probe_tokens += record.tokens
            self._probe_seconds += record.seconds
        catching_up, self._after_plain = self._after_plain, False
        self._count_acceptance(record.branching, record.accepted)
        if catching_up:  # the draft fed the tokens it was only told: a cost of switching, not of the shape
            return
        predicted_draft = sum(self.prior.draft_cost(w) for w in fed_widths(record.branching))
        if predicted_draft > 0:
            self.draft_ratio.add(record.draft_seconds / predicted_draft)
        predicted_verify = sum(self.prior.verify_seconds[k] for k in record.branching)
        if predicted_verify > 0:
            self.verify_ratio.add(record.verify_seconds / predicted_verify)
        rest = forwards - record.draft_seconds - record.verify_seconds
        self.loop_seconds.add(max(rest, 0.0))
        self.speculative_rates.append((record.tokens, record.seconds))

    # -- the estimates ----------------------------------------------------------------------------------------

    def target_cost(self, rows: int) -> float:
        """``t(n)``: measured where n was seen, else the prior scaled as at the nearest n seen."""
        if rows in self.target_seconds:
            return self.target_seconds[rows].value
        if not self.target_seconds:
            return self.prior.target_cost(rows)
        nearest = min(self.target_seconds, key=lambda n: (abs(math.log(n / rows)), n))
        return self.prior.target_cost(rows) * self.target_seconds[nearest].value / self.prior.target_cost(nearest)

    @property
    def rejection_ratio(self) -> float:
        """``rho``: observed over predicted rejections (pseudo-counts included)."""
        return self.rejected / self.expected_rejected

    def acceptance(self) -> list[float]:
        """``A(1..K)`` now: ``1 - rho (1 - A_prior(k))``, clipped to [0, 1]."""
        rho = self.rejection_ratio
        return [min(max(1.0 - rho * (1.0 - a), 0.0), 1.0) for a in self.prior.acceptance]

    def estimate(self) -> Calibration:
        """The current estimates as a `Calibration` (the prior's survival correlation and positions kept)."""
        prior = self.prior
        return Calibration(
            acceptance=self.acceptance(),
            target_seconds={n: self.target_cost(n) for n in COST_POINTS},
            draft_seconds={w: s * self.draft_ratio.value for w, s in prior.draft_seconds.items()},
            round_seconds=self.loop_seconds.value, positions=prior.positions, correlation=prior.correlation,
            verify_seconds={k: s * self.verify_ratio.value for k, s in prior.verify_seconds.items()},
            plain_round_seconds=self.plain_loop_seconds.value)

    def measured_rates(self) -> tuple[float | None, float | None]:
        """Tokens per second of the last speculative rounds and of the last plain tokens (None: too few)."""
        def rate(window: deque) -> float | None:
            seconds = sum(s for _, s in window)
            return sum(t for t, _ in window) / seconds if len(window) >= MIN_RATE_ROUNDS and seconds > 0 else None

        return rate(self.speculative_rates), rate(self.plain_rates)

    def far_off(self) -> str | None:
        """Why the prior is far off what was measured (a target forward off by more than ``FAR_OFF`` at a row
        count seen ``FAR_OFF_ROUNDS`` times), or None."""
        for rows, recent in sorted(self.target_seconds.items()):
            if recent.count < FAR_OFF_ROUNDS:
                continue
            measured, cached = recent.value, self.prior.target_cost(rows)
            if not 1 / FAR_OFF <= measured / cached <= FAR_OFF:
                return (f"a target forward of {rows} row(s) took {measured * 1e3:.1f} ms here against "
                        f"{cached * 1e3:.1f} ms in the calibration")
        return None

    def refreshed(self) -> Calibration:
        """The prior with this run's measured costs (its acceptance kept: the text decoded here need not be typical),
        marked ``refreshed`` (date and load) in ``made``."""
        estimate = self.estimate()
        estimate.acceptance = list(self.prior.acceptance)
        estimate.made = {**self.prior.made, "refreshed": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                         "refreshed_load": load_average()}
        return estimate

    def rebase(self, prior: Calibration) -> None:
        """Take ``prior`` (a refreshed calibration: `refreshed`) as the prior from now on: the draft's and the
        verification's ratios start again against its curves, and `far_off` counts afresh."""
        self.prior = prior
        self.draft_ratio, self.verify_ratio = Recent(1.0), Recent(1.0)
        for recent in self.target_seconds.values():
            recent.count = 0

    # -- deciding ---------------------------------------------------------------------------------------------

    def _decide(self, emitted: int) -> None:
        estimate = self.estimate()
        if self.shape == PLAIN:  # a plain stretch is over: probe the best speculative shape
            tree = estimate.choose(chains_only=self.chains_only)
            self.speculative_rates.clear()
            self._probing = True
            self._probe_tokens, self._probe_seconds = 0, 0.0
            self._set(emitted, tree.branching, f"probe after {self._gap} plain tokens: {_predicted(tree)}",
                      rounds=PROBE_ROUNDS)
            return
        choice = estimate.choose(chains_only=self.chains_only, plain=True)
        speculative, plain = self.measured_rates()
        probing, self._probing = self._probing, False
        measured = (f" (measured {speculative:.1f} tokens/s speculating, {plain:.1f} plain)"
                    if speculative is not None and plain is not None else "")
        if choice.branching != PLAIN and speculative is not None and plain is not None and speculative < plain:
            choice, reason = TreeChoice(PLAIN, 1.0, 1.0 / plain), f"guard: speculating slower than plain{measured}"
        else:
            reason = f"{'probe over, ' if probing else ''}online model: {_predicted(choice)}{measured}"
        if choice.branching == PLAIN:
            self._gap = min(max(2 * self._gap, self._paid_gap()), LONGEST_GAP) if probing else FIRST_PROBE
            self._set(emitted, PLAIN, reason, rounds=self._gap)
        else:
            self._gap = FIRST_PROBE
            self._set(emitted, choice.branching, reason)

    def _paid_gap(self) -> int:
        """Plain tokens over which the probe just lost costs ``PROBE_BUDGET`` of their time: ``extra / (PROBE_BUDGET
        s)``, ``s`` a plain token's measured seconds, ``extra`` the probe's seconds minus its tokens at ``s`` (0
        where nothing was measured or the probe cost nothing extra)."""
        plain_tokens = sum(tokens for tokens, _ in self.plain_rates)
        if not plain_tokens or not self._probe_tokens:
            return 0
        token_seconds = sum(seconds for _, seconds in self.plain_rates) / plain_tokens
        extra = self._probe_seconds - self._probe_tokens * token_seconds
        return math.ceil(extra / (PROBE_BUDGET * token_seconds)) if extra > 0 and token_seconds > 0 else 0

    def _set(self, emitted: int, branching: tuple[int, ...], reason: str, rounds: int = DECIDE_EVERY) -> None:
        if branching != self.shape:
            self.changes.append({"at_token": emitted, "branching": list(branching), "reason": reason})
        self.shape = tuple(branching)
        self._rounds_left = rounds

    def _count_acceptance(self, branching: tuple[int, ...], accepted: int) -> None:
        """Nodes the walk reached: depths 0..accepted (the last one rejected unless it was a leaf)."""
        kappa = [1.0, *self.prior.correlation]
        for depth in range(min(accepted + 1, len(branching))):
            a = self.prior.acceptance[min(branching[depth], len(self.prior.acceptance)) - 1]
            predicted = min(1.0, a * kappa[depth + 1] / kappa[depth]) if kappa[depth] > 0 else a
            self.rejected = ACCEPTANCE_MEMORY * self.rejected + (depth == accepted)
            self.expected_rejected = ACCEPTANCE_MEMORY * self.expected_rejected + (1.0 - predicted)


def _predicted(choice: TreeChoice) -> str:
    shape = ",".join(map(str, choice.branching)) or "plain"
    return f"{shape} predicted {choice.tokens_per_second:.1f} tokens/s"

