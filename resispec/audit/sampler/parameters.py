"""A verdict per claimed processing parameter: which claim do the emitted tokens break?

For each claimed parameter X (``Processing.claims``; ``eos`` goes with ``min_tokens``) and each context, the law
with X dropped (X at its default) is set against the claimed law on the tokens of every well-formed row (node: the
token; chain, tree: each emitted token against the law at its prefix, where an exact sampler emits it from): the
log-likelihoods ``log L(tokens | law without X)`` and ``log L(tokens | claimed law)``, summed over contexts and
prefixes, each law smoothed (``SMOOTHING``) so a token it forbids (as where a skipped min-p emits a token the claim
forbids) costs a finite amount. Verdicts, in words:

- ``FAIL``: the law tests or the output contract rejected, and the law without X explains the tokens best of
  all (X skipped on the verified rows: min-p or a logit bias applied to the bonus row only, a penalty dropped under
  speculation); ``suspect``: the law without X explains them better than the claim, another one better still;
- ``consistent``: otherwise, where the law without X differs from the claimed law, at some context or prefix the
  rows reached, by at least the TV its context's first law test detects (node: token law; chain, tree: first token);
- ``not testable here``: otherwise (the claim barely moves the law on these contexts: never a pass on nothing).

With mixed per-row parameters (``row_parameters``) each row parameter X gets a verdict the same way
(``row_parameter_verdicts``), its alternatives the laws of a combination with X read from another combination: per
combination the best such alternative's log-likelihood gain over the claim, X's score the sum of the positive
gains; ``FAIL`` names the combination whose rows follow another combination's X and that combination.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from resispec.audit.sampler.report import SamplerTest
from resispec.processing import Processing


@dataclass
class Evidence:
    """One context's counts for one law test, its claimed law and, per claimed parameter, the law without it."""

    test: str
    counts: np.ndarray
    claimed: np.ndarray
    without: dict[str, np.ndarray]
    combination: str = ""
    misread: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    """With mixed rows: per row parameter, per other combination, the law with the parameter read from it."""


def dropped(processing: Processing) -> dict[str, Processing]:
    """Per claimed parameter (``eos`` goes with ``min_tokens``), the claims with it at its default."""
    defaults = Processing()
    return {name: replace(processing, **{name: getattr(defaults, name)})
            for name in processing.claims() if name != "eos"}


SMOOTHING = 1e-3
"""Each law is mixed with the uniform law at this weight before the likelihoods are compared: a token a law forbids
costs ``log(SMOOTHING / V)``, not ``-inf``, so a few rows of another branch (a bonus row under the full claims)
cannot outweigh the bulk of the rows."""


def _log_likelihood(counts: np.ndarray, law: np.ndarray) -> float:
    smoothed = (1.0 - SMOOTHING) * law + SMOOTHING / law.size
    return float((counts * np.log(smoothed)).sum())


def parameter_verdicts(evidence: list[Evidence], tests: list[SamplerTest], broken: bool) -> dict[str, str]:
    """The verdict line of every claimed parameter (module doc); ``tests``: the audit's judged tests; ``broken``:
    whether the output contract found a token the claims forbid."""
    if not evidence:
        return {}
    rejected = broken or any(test.rejected and test.dimension == "law" for test in tests)
    detects = {f"{test.name}, {test.context}": test.result.min_detectable_tv for test in tests}
    names = list(dict.fromkeys(name for e in evidence for name in e.without))
    holding = {name: [e for e in evidence if name in e.without] for name in names}  # mixed rows: not every context
    gains = {name: sum(_log_likelihood(e.counts, e.without[name]) - _log_likelihood(e.counts, e.claimed)
                       for e in holding[name]) for name in names}
    better = sorted((name for name in names if gains[name] > 0), key=lambda name: -gains[name])
    verdicts = {}
    for name in names:
        distance = max(_tv(e.without[name], e.claimed) for e in holding[name])
        visible = any(_tv(e.without[name], e.claimed) >= detects.get(e.test, np.inf) for e in holding[name])
        gain = f" (log-likelihood {gains[name]:+.1f} over the claim)"
        if rejected and better and name == better[0]:
            verdicts[name] = f"FAIL: the tokens follow the law without {name} best{gain}"
        elif rejected and name in better:
            verdicts[name] = (f"suspect: the tokens follow the law without {name} better than the claimed law{gain}, "
                              f"the law without {better[0]} better still")
        elif visible:
            verdicts[name] = (f"consistent: dropping it moves the law by TV up to {distance:.3f}, which the tests "
                              f"detect" + ("; the tokens do not follow the law without it" if rejected else ""))
        else:
            verdicts[name] = (f"not testable here: dropping it moves the law by TV at most {distance:.3f}, below "
                              f"what the tests detect")
    return verdicts


def row_parameter_verdicts(evidence: list[Evidence], tests: list[SamplerTest], broken: bool) -> dict[str, str]:
    """The verdict line of every row parameter the mixed rows vary (module doc); arguments as
    ``parameter_verdicts``."""
    misread = [e for e in evidence if e.misread]
    if not misread:
        return {}
    rejected = broken or any(test.rejected and test.dimension == "law" for test in tests)
    detects = {f"{test.name}, {test.context}": test.result.min_detectable_tv for test in tests}
    names = list(dict.fromkeys(name for e in misread for name in e.misread))
    gains: dict[str, dict[tuple[str, str], float]] = {name: {} for name in names}
    for e in misread:
        base = _log_likelihood(e.counts, e.claimed)
        for name, laws in e.misread.items():
            for other, law in laws.items():
                key = (e.combination, other)
                gains[name][key] = gains[name].get(key, 0.0) + _log_likelihood(e.counts, law) - base
    best = {name: {} for name in names}  # per parameter and combination: the other combination that fits best
    for name in names:
        for (mine, other), gain in gains[name].items():
            if gain > best[name].get(mine, ("", -np.inf))[1]:
                best[name][mine] = (other, gain)
    scores = {name: sum(max(gain, 0.0) for _, gain in best[name].values()) for name in names}
    ranked = sorted((name for name in names if scores[name] > 0), key=lambda name: -scores[name])
    verdicts = {}
    for name in names:
        laws = [(e, law) for e in misread for law in e.misread.get(name, {}).values()]
        distance = max(_tv(law, e.claimed) for e, law in laws)
        visible = any(_tv(law, e.claimed) >= detects.get(e.test, np.inf) for e, law in laws)
        mine, (other, gain) = max(best[name].items(), key=lambda item: item[1][1])
        found = f"rows of [{mine}] follow {name} of [{other}] (log-likelihood {gain:+.1f} over their own)"
        if rejected and ranked and name == ranked[0]:
            verdicts[name] = f"FAIL: {found}"
        elif rejected and name in ranked:
            verdicts[name] = f"suspect: {found}; {ranked[0]} read from another row explains the tokens better"
        elif visible:
            verdicts[name] = (f"consistent: reading it from another combination moves the law by TV up to "
                              f"{distance:.3f}, which the tests detect"
                              + ("; the tokens do not follow another row's" if rejected else ""))
        else:
            verdicts[name] = (f"not testable here: reading it from another combination moves the law by TV at most "
                              f"{distance:.3f}, below what the tests detect")
    return verdicts


def _tv(a: np.ndarray, b: np.ndarray) -> float:
    return 0.5 * float(np.abs(a - b).sum())
