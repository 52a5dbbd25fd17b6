"""What a benchmark's ``--json`` records must look like: the fields, one record per configuration, and
times that are finite positive seconds (no timing value itself is asserted: speed is measured, not tested)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def check_timing_records(records: list[dict], fields: Sequence[str], configurations: list[tuple],
                         times: Sequence[str], ratios: dict[str, tuple[str, ...]], repeats: int,
                         wall_seconds: float) -> None:
    """``records`` hold exactly ``fields``, one per configuration in order (``configurations``: the values of
    the leading fields); every field of ``times`` (medians in seconds) and of ``ratios`` is finite and
    positive; each ratio given as ``(numerator, denominator)`` equals the quotient of those fields (``()``:
    not checked). Seconds, not milliseconds: every timed call ran at least ``repeats`` times, and at least
    ceil(repeats / 2) of those runs took at least the median, so the medians times ceil(repeats / 2), summed
    over records, fit in the command's measured ``wall_seconds``."""
    assert all(list(record) == list(fields) for record in records), [list(record) for record in records]
    key_length = len(configurations[0])
    assert [tuple(record[field] for field in fields[:key_length]) for record in records] == configurations
    for record in records:
        for field in (*times, *ratios):
            assert isinstance(record[field], float) and math.isfinite(record[field]) and record[field] > 0, \
                (field, record)
        for ratio, parts in ratios.items():
            if parts:
                numerator, denominator = parts
                assert math.isclose(record[ratio], record[numerator] / record[denominator], rel_tol=1e-9), record
    timed = math.ceil(repeats / 2) * sum(record[field] for record in records for field in times)
    assert timed <= wall_seconds, (timed, wall_seconds)
