"""The statistical tests of a sampler audit, each a function of the significance level it is judged at.

Per context (a node's suite pair, a chain's or tree's model):

- ``token law`` (node): chi-square (sparse bins merged) and TV of the emitted tokens against the processed p;
- ``first token`` (chain, tree): the same for the first emitted token against p at the root, and ``first 2
  tokens`` / ``first 3 tokens``: the law of the first tokens of the continued sequences (below) against the
  target's marginal;
- ``sequence law (cells)``: the emitted tokens continued by target sampling to D + 1 tokens (an exact sampler
  makes them distributed as the target's ``T(s) = prod_t p(s_t | s_<t)``, ``resispec.audit.round_law``),
  chi-square and TV over the ``V^(D+1)`` cells;
- ``sequence law (by prefix)``: the same sequences, one merged chi-square of the next token per observed
  prefix, statistics and degrees of freedom summed (asymptotically chi-square: the conditional tests are
  independent under the null); keeps the power the cell test loses when sparse cells are pooled;
- ``acceptance`` (where a rule is claimed): node, the share of tokens that are candidates against the rule's
  exact value; chain and tree, the law of the accepted depth against the rule's (enumerated) law.

Per batch group (``resispec.audit.sampler.batches``): the randomized PIT of every emitted token (node) or of
every token of the continued sequences (chain, tree: the D + 1 PIT values of a sequence distributed as T are
i.i.d. uniform; the emitted tokens alone are not, since where a round stops depends on them), KS + chi-square.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from resispec.audit.counts import audit_counts
from resispec.audit.goodness_of_fit import merged_chi_square
from resispec.audit.pit import pit_audit
from resispec.audit.result import AuditResult

Conditional = Callable[[tuple[int, ...]], np.ndarray]


@dataclass
class PendingTest:
    """A test before the family's level is known: ``evaluate(alpha) -> AuditResult``."""

    name: str
    context: str
    dimension: str
    evaluate: Callable[[float], AuditResult]


def token_pits(p: np.ndarray, tokens: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Randomized PIT ``P_p(Y < y) + u p(y)`` per row: ``p`` (n, V), ``tokens`` (n,), ``u`` (n,)."""
    rows = np.arange(tokens.size)
    return np.cumsum(p, axis=1)[rows, tokens] - (1.0 - u) * p[rows, tokens]


def continue_sequences(emitted: np.ndarray, target: Conditional, rng: np.random.Generator) -> np.ndarray:
    """``emitted`` (n, D + 1), -1 padded, continued by target sampling to D + 1 tokens each."""
    sequences = emitted.copy()
    for sequence in sequences:
        for t in np.flatnonzero(sequence < 0):
            p = target(tuple(int(x) for x in sequence[:t]))
            sequence[t] = min(int(np.searchsorted(np.cumsum(p), rng.random() * p.sum(), side="right")),
                              int(np.flatnonzero(p > 0)[-1]))
    return sequences


def sequence_pits(sequences: np.ndarray, target: Conditional, rng: np.random.Generator) -> np.ndarray:
    """(n, D + 1) randomized PIT of every token of ``sequences`` against the target at its prefix."""
    values = np.empty(sequences.shape)
    u = rng.random(sequences.shape)
    for row, sequence in enumerate(sequences):
        for t, token in enumerate(sequence):
            p = target(tuple(int(x) for x in sequence[:t]))
            values[row, t] = p[:token].sum() + u[row, t] * p[token]
    return values


def sequence_codes(sequences: np.ndarray, vocab: int) -> np.ndarray:
    """Big-endian cell index of each sequence (``s_1`` most significant, as ``RoundModels``)."""
    codes = np.zeros(sequences.shape[0], dtype=np.int64)
    for column in sequences.T:
        codes = codes * vocab + column
    return codes


def prefix_chi_square(sequences: np.ndarray, target: Conditional, alpha: float, test: str) -> AuditResult:
    """Per observed prefix (every position), the merged chi-square of the next token against the target;
    statistics and degrees of freedom summed (module doc). ``tv`` is the count-weighted mean conditional TV."""
    statistic, df, impossible, tv_sum = 0.0, 0, 0, 0.0
    n = sequences.shape[0]
    for t in range(sequences.shape[1]):
        prefixes, inverse = np.unique(sequences[:, :t], axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        for index, prefix in enumerate(prefixes):
            tokens = sequences[inverse == index, t]
            p = target(tuple(int(x) for x in prefix))
            counts = np.bincount(tokens, minlength=p.size)
            chi = merged_chi_square(counts, p)
            statistic, df, impossible = statistic + chi.statistic, df + chi.df, impossible + chi.impossible
            tv_sum += 0.5 * float(np.abs(counts - tokens.size * p).sum())
    from scipy import stats  # deferred: see the resispec package doc

    pvalue = 0.0 if impossible else float(stats.chi2.sf(statistic, df)) if df else 1.0
    tv = tv_sum / (n * sequences.shape[1])
    return AuditResult(test=test, n=n, alpha=alpha, passed=pvalue >= alpha, pvalue=pvalue, chi2=statistic,
                       chi2_df=df, chi2_pvalue=pvalue, tv=tv, tv_upper=float("nan"), min_detectable_tv=float("nan"),
                       note=(f"{impossible} token(s) emitted where p = 0; " if impossible else "")
                       + "tv: mean TV of the next-token law per prefix; its power: the power table "
                         "(docs/audit_sampler.md)")


def counts_test(name: str, context: str, dimension: str, counts: np.ndarray, law: np.ndarray) -> PendingTest:
    return PendingTest(name, context, dimension,
                       lambda alpha: audit_counts(counts, law, alpha, test=f"{name}, {context}"))


def pit_test(name: str, context: str, values: np.ndarray) -> PendingTest | None:
    """A PIT test of the values, None with fewer than 2 (the group was not reached)."""
    if values.size < 2:
        return None
    return PendingTest(name, context, "batch", lambda alpha: pit_audit(values, alpha))

