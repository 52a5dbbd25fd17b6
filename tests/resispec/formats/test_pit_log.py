"""The ``resispec-pit/1`` token log: whole shards round-trip, bad rows and foreign files are named."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from resispec.formats.pit_log import (
    COLUMNS,
    PitLogError,
    file_metadata,
    is_pit_log,
    read_shard,
    rows_table,
    shard_paths,
    write_shard,
)


def columns(n: int, pit: np.ndarray | None = None, kind: str = "plain") -> dict[str, list]:
    pit = np.linspace(0.01, 0.99, n) if pit is None else pit
    return {"request_id": [f"r{i % 3}" for i in range(n)], "position": list(range(n)),
            "draft_position": [-1] * n, "kind": [kind] * n, "accepted": [False] * n, "token": [7] * n,
            "p": [0.5] * n, "pit": list(pit), "batch_size": [4] * n, "params": ["T = 1, unseeded"] * n,
            "step": list(range(n))}


def test_shards_round_trip_and_are_listed_in_order(tmp_path):
    metadata = file_metadata(engine="vllm 0.32.0")
    for index in range(3):
        write_shard(rows_table(columns(5), metadata), tmp_path, index)
    (tmp_path / ".pit-1-000009.partial-abcd.parquet").write_bytes(b"half a file")  # a killed writer's leftover
    shards = shard_paths(tmp_path)
    assert [path.name.rsplit("-", 1)[1] for path in shards] == ["000000.parquet", "000001.parquet",
                                                                "000002.parquet"]
    table = read_shard(shards[1])
    assert table.column_names == list(COLUMNS) and table.num_rows == 5
    assert table.column("kind").to_pylist() == ["plain"] * 5
    assert is_pit_log(tmp_path) and is_pit_log(shards[0])


@pytest.mark.parametrize("change, message", [
    (lambda c: c.update(kind=["bogus"] * 5), "kind 'bogus'"),
    (lambda c: c.update(pit=[1.5] * 5), "PIT value outside"),
    (lambda c: c.update(p=[-0.1] * 5), "probability that is not >= 0"),
    (lambda c: c.pop("token"), "missing column 'token'"),
])
def test_bad_rows_are_named(change, message):
    data = columns(5)
    change(data)
    with pytest.raises(PitLogError, match=message):
        rows_table(data, file_metadata())


def test_foreign_files_are_not_pit_logs(tmp_path):
    other = tmp_path / "pit-0-000000.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), other)
    assert not is_pit_log(tmp_path) and not is_pit_log(tmp_path / "missing")
    with pytest.raises(PitLogError, match="not a resispec-pit/1 file"):
        read_shard(other)
    with pytest.raises(PitLogError, match="no pit-\\*.parquet shard"):
        shard_paths(tmp_path / "empty" if (tmp_path / "empty").mkdir() is None else tmp_path)
    with pytest.raises(ValueError, match="unknown key 'bogus'"):
        file_metadata(bogus="x")
