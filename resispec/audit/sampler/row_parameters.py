"""Per-request parameters in mixed batches: the parameter combinations the rows of one call carry.

With the ``processing`` extra every context is audited under the claims and under each combination of the groups
``vary`` names, all rows shuffled into the same calls, each row handed its own ``Processing`` (and, with the
``history`` extra, its own history). A combination replaces those fields of the claims:

- ``sampling``: ``T = 0.5, top-k 3`` and ``T = 1.6, top-p 0.9`` (the default with the ``processing`` extra);
- ``bias``: ``min_p = 0.3``, ``logit_bias`` +1.5 on id 1, id 0 banned;
- ``penalties``: repetition 1.8, presence 0.5, frequency 0.6 over a history of its own, ``(2, 2, 4, 5, 5)``
  (needs the ``history`` extra and logits: the repetition penalty depends on their sign);
- ``mask``: the allowed ids ``(0, 2, 3, 5)`` (a grammar's mask) and ``min_tokens = 6`` holding back ``eos = 0``
  (needs the ``history`` extra).

Ids fold into a context's vocabulary (id modulo V, as ``models.history_for``); every combination leaves each suite
pair, tie pair and chain family a token of positive probability in p and in q. A parameter read from another row
(TensorRT-LLM's ``temperatures[:batch_size]`` of a per-token buffer, NVIDIA/TensorRT-LLM PR #12588's review; a
grammar-bitmask row read per request from a per-token buffer, the class of vllm-project/vllm#44006 / #54437)
changes the law of the rows whose combination differs from the one read: the law tests name the context, the
batch groups per combination and position (``combination_groups``) the rows, and ``misread_claims`` the
alternatives a parameter read from another combination gives, for the verdict per row parameter (``parameters``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from resispec.processing import CLAIMS, Processing


@dataclass(frozen=True)
class Combination:
    """One combination of per-row parameters: ``change`` replaces fields of the claims, ``history`` (None: the
    context's own) the ids generated before; ids fold into the context's vocabulary."""

    name: str
    change: dict = field(default_factory=dict)
    history: tuple[int, ...] | None = None

    def claims(self, processing: Processing, vocab: int) -> Processing:
        """The claims with this combination's fields, their ids modulo ``vocab``."""
        change = dict(self.change)
        if "banned" in change:
            change["banned"] = tuple(sorted({token % vocab for token in change["banned"]}))
        if "allowed" in change:
            change["allowed"] = tuple(sorted({token % vocab for token in change["allowed"]}))
        if "logit_bias" in change:
            change["logit_bias"] = tuple((token % vocab, bias) for token, bias in change["logit_bias"])
        if "eos" in change:
            change["eos"] = change["eos"] % vocab
        return replace(processing, **change)

    def history_for(self, own: tuple[int, ...], vocab: int) -> tuple[int, ...]:
        """The row's history: this combination's (ids modulo ``vocab``) or the context's ``own``."""
        return own if self.history is None else tuple(token % vocab for token in self.history)


CLAIMED = Combination("claims")
VARY: dict[str, tuple[Combination, ...]] = {
    "sampling": (Combination("T 0.5, top-k 3", {"temperature": 0.5, "top_k": 3}),
                 Combination("T 1.6, top-p 0.9", {"temperature": 1.6, "top_p": 0.9})),
    "bias": (Combination("min-p 0.3, bias 1:+1.5, banned 0",
                         {"min_p": 0.3, "logit_bias": ((1, 1.5),), "banned": (0,)}),),
    "penalties": (Combination("penalties 1.8/0.5/0.6, history 2,2,4,5,5",
                              {"repetition_penalty": 1.8, "presence_penalty": 0.5, "frequency_penalty": 0.6},
                              (2, 2, 4, 5, 5)),),
    "mask": (Combination("allowed 0,2,3,5, min_tokens 6 (eos 0)",
                         {"allowed": (0, 2, 3, 5), "min_tokens": 6, "eos": 0}),),
}
"""The groups ``vary`` may name (module doc), each its combinations."""
DEFAULT_VARY = ("sampling",)
"""What varies with the ``processing`` extra when ``vary`` is not given."""


def check_vary(vary: tuple[str, ...], extras: tuple[str, ...], processing: Processing, inputs: str) -> None:
    """``ValueError`` (one line) when ``vary`` names an unknown group, is given without the ``processing`` extra,
    or needs the ``history`` extra or logits the contract does not hand over."""
    unknown = [name for name in vary if name not in VARY]
    if unknown:
        raise ValueError(f"vary: unknown {', '.join(map(repr, unknown))}; known: {', '.join(VARY)}")
    if vary and "processing" not in extras:
        raise ValueError("vary: rows carry their own parameters through the 'processing' extra; declare it "
                         "(--extras processing)")
    for combination in combinations(vary):
        claims = combination.claims(processing, FLAG_VOCAB)
        if (claims.uses_history or combination.history is not None) and "history" not in extras:
            raise ValueError(f"vary: the combination [{combination.name}] acts on each row's history; declare the "
                             "'history' extra")
        if claims.needs_logits and inputs == "probs":
            raise ValueError(f"vary: the combination [{combination.name}] has a repetition penalty, which depends "
                             "on the logits' sign; audit it with inputs='logits'")


FLAG_VOCAB = 6
"""The vocabulary the combinations' ids fold into where only their rules' kinds matter (``needs_logits``)."""


def needs_logits(processing: Processing, vary: tuple[str, ...]) -> bool:
    """Whether some row's claims depend on the logits' sign (the repetition penalty; ``models.logit_shift``)."""
    return any(combination.claims(processing, FLAG_VOCAB).needs_logits for combination in combinations(vary))


def combinations(vary: tuple[str, ...]) -> list[Combination]:
    """The claims, then the combinations of every group in ``vary`` (the claims alone when it is empty)."""
    return [CLAIMED, *(combination for name in vary for combination in VARY[name])]


def row_claims(processing: Processing, vary: tuple[str, ...], own: tuple[int, ...],
               vocab: int) -> list[tuple[Combination, Processing, tuple[int, ...]]]:
    """Per combination (module doc), its claims and history in a context of ``vocab`` tokens with history
    ``own``; a combination equal to an earlier one is left out."""
    rows, seen = [], set()
    for combination in combinations(vary):
        claims, history = combination.claims(processing, vocab), combination.history_for(own, vocab)
        if (claims, history) not in seen:
            seen.add((claims, history))
            rows.append((combination, claims, history))
    return rows


ROW_PARAMETERS = tuple(name for name in CLAIMS if name != "eos") + ("history",)
"""The parameters a row may read from another: every claim (``eos`` goes with ``min_tokens``) and the history."""


def misread_claims(mine: tuple[Processing, tuple[int, ...]], others: dict[str, tuple[Processing, tuple[int, ...]]]
                   ) -> dict[str, dict[str, tuple[Processing, tuple[int, ...]]]]:
    """Per parameter, per other combination (by name) whose value differs: ``mine`` (claims, history) with that
    parameter read from the other one (distinct values once each; a combination of claims ``Processing`` refuses,
    e.g. ``min_tokens`` without ``eos``, is left out)."""
    claims, history = mine
    out: dict[str, dict[str, tuple[Processing, tuple[int, ...]]]] = {}
    for name in ROW_PARAMETERS:
        seen = set()
        for label, (other, other_history) in others.items():
            if name == "history":
                value, alternative = other_history, (claims, other_history)
                if value == history:
                    continue
            else:
                value = getattr(other, name)
                if value == getattr(claims, name):
                    continue
                fields = {name: value, **({"eos": other.eos} if name == "min_tokens" else {})}
                try:
                    alternative = (replace(claims, **fields), history)
                except ValueError:
                    continue
            if value not in seen:
                seen.add(value)
                out.setdefault(name, {})[label] = alternative
    return out


def combination_groups(combination: np.ndarray, placement: object, groups: dict[str, Callable]
                       ) -> dict[str, np.ndarray]:
    """Row masks per combination and batch position: each of ``groups`` (name -> mask of a placement) restricted
    to the rows of each combination (``combination``: (rows,) names)."""
    return {f"[{name}], {group}": (combination == name) & select(placement)
            for name in dict.fromkeys(combination.tolist()) for group, select in groups.items()}


def law_or_none(law: Callable[[], np.ndarray]) -> np.ndarray | None:
    """``law()``, or None where the rules leave a row no token (``ValueError`` of ``resispec.processing``)."""
    try:
        return law()
    except ValueError:
        return None
