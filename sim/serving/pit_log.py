"""The audit of an engine's token log (``resispec-pit/1``, ``resispec.formats.pit_log``): is every emitted token a draw
from the processed target row it was scored against?

Under exactness the randomized PITs are i.i.d. Uniform(0, 1) (``resispec.audit.pit``) in every subset chosen without
looking at them, so the log is tested overall and per group: each sampling-parameter digest, each draft position,
each kind and each batch-size class (1, 2-3, 4-7, ...: powers of two). The kinds tested are ``plain``, ``verified``
and ``bonus``: whether a verified token is an *accepted* draft or a *recovered* token is decided by the token itself
(it is accepted iff it equals its draft), so each of those two subsets is chosen by looking at the token and its
PITs are not uniform even for an exact sampler (an accepted token's PIT lies in its draft's interval of the CDF);
their union, every token at a draft position below the chain's length, is chosen by the earlier tokens only. The
report counts the four kinds (``kinds``) without testing them apart. Every test is judged at the family's Bonferroni
level (``resispec.audit.family``), and each names its size and its detectable TV at that level; a group with fewer
than ``MIN_TESTED_VALUES`` tokens is untested, never passed. Independently of the tests, any token with ``p = 0``
under its row rejects (an exact sampler never emits one). Every token is read from every whole shard; a shard that
is not of the layout is an error naming it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa

from resispec.audit import FAMILY_ALPHA, Verdict, bonferroni_level, pit_audit
from resispec.audit.pit import MIN_TESTED_VALUES
from resispec.formats.pit_log import KINDS, read_shard, shard_paths

GROUPINGS = ("params", "draft_position", "kind", "batch_size")
TESTED_KIND = {"plain": "plain", "accepted": "verified", "recovered": "verified", "bonus": "bonus"}
"""The kind a token is tested under (module doc: accepted and recovered tokens only together)."""


def batch_class(size: int) -> str:
    """The batch-size class of ``size`` >= 1: ``1``, ``2-3``, ``4-7``, ... (powers of two)."""
    low = 1 << int(math.log2(size))
    return "1" if low == 1 else f"{low}-{2 * low - 1}"


def _order(grouping: str, value: object) -> tuple:
    """Groups in numeric order for draft positions and batch classes, by name otherwise."""
    if grouping == "draft_position":
        return (int(value), "")
    if grouping == "batch_size":
        return (int(str(value).split("-")[0]), "")
    return (0, str(value))


def read_log(path: str | Path) -> tuple[pa.Table, int]:
    """Every row of every shard of ``path``, and the number of shards."""
    shards = shard_paths(path)
    tables = [read_shard(shard) for shard in shards]
    return pa.concat_tables([table.replace_schema_metadata(None) for table in tables]), len(shards)


def _test(name: str, pits: np.ndarray, level: float) -> dict:
    """One group's PIT test at ``level``: its size, p-value, TV bound and detectable TV (or untested)."""
    tested = pits.size >= MIN_TESTED_VALUES
    result = pit_audit(pits, alpha=level) if pits.size >= 2 else None
    tested = tested and result is not None and result.tested
    return {
        "group": name,
        "tokens": int(pits.size),
        "pvalue": result.pvalue if tested else float("nan"),
        "tv_upper": result.tv_upper if tested else float("nan"),
        "min_detectable_tv": result.min_detectable_tv if tested else float("nan"),
        "verdict": Verdict.of(result.passed, True).value if tested else Verdict.UNTESTED.value,
    }


def audit_pit_log(path: str | Path, alpha: float = FAMILY_ALPHA) -> dict:
    """The report of the log at ``path`` (module doc): ``tokens``, ``shards``, ``kinds`` (count of each of ``KINDS``),
    ``zero_p`` (tokens with p = 0),
    ``level`` (per test), ``tests`` (overall first, then per group, each with its size and detectable TV) and
    ``verdict`` (``Verdict`` value: FAIL if any test rejects or any token has p = 0, UNTESTED if no test had power)."""
    table, shards = read_log(path)
    columns = {name: table.column(name).to_numpy(zero_copy_only=False) for name in ("pit", "p", "batch_size")}
    labels = {name: np.asarray(table.column(name).to_pylist(), dtype=object)
              for name in ("params", "draft_position", "kind")}
    kinds = {kind: int(np.count_nonzero(labels["kind"] == kind)) for kind in KINDS}
    labels["kind"] = np.asarray([TESTED_KIND[kind] for kind in labels["kind"]], dtype=object)
    labels["batch_size"] = np.asarray([batch_class(int(size)) for size in columns["batch_size"]], dtype=object)
    groups = [("all tokens", np.ones(table.num_rows, dtype=bool))]
    for grouping in GROUPINGS:
        for value in sorted(set(labels[grouping]), key=lambda value: _order(grouping, value)):
            groups.append((f"{grouping}={value}", labels[grouping] == value))
    level = bonferroni_level(len(groups), alpha)
    tests = [_test(name, columns["pit"][mask], level) for name, mask in groups]
    zero_p = int(np.count_nonzero(columns["p"] <= 0))
    if zero_p or any(test["verdict"] == Verdict.FAIL.value for test in tests):
        verdict = Verdict.FAIL
    elif all(test["verdict"] == Verdict.UNTESTED.value for test in tests):
        verdict = Verdict.UNTESTED
    else:
        verdict = Verdict.PASS
    return {"format": "resispec-pit/1", "path": str(path), "shards": shards, "tokens": table.num_rows,
            "kinds": kinds, "zero_p": zero_p, "alpha": alpha, "level": level, "tests": tests, "verdict": verdict.value,
            "passed": verdict == Verdict.PASS}
