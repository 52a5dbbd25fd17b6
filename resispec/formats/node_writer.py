"""Writing ``resispec-nodes/1`` Parquet files: tables from arrays, beside the format's schema
(``resispec.formats.nodes``) and its one reader (``resispec.formats.node_reader``). Needs ``pyarrow`` (the ``sim``
extra), so it is imported on use."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from resispec.formats.atomic import atomic_path
from resispec.formats.nodes import NodeBatch, check_schema, file_metadata, node_schema

OPTIONAL_COLUMNS = ("sequence_id", "position", "depth")
NUMPY_TYPES = {pa.int32(): np.int32, pa.int64(): np.int64, pa.float32(): np.float32, pa.float64(): np.float64}


def nodes_table(columns: dict[str, np.ndarray], vocab_size: int, **metadata: str | float) -> pa.Table:
    """A table of the layout from NumPy columns: ``token_ids``, ``p``, ``q`` (N, M); ``candidates``,
    either (N, K) with -1 padding at the end or a list of 1-D arrays; ``verifier`` a string or (N,)
    strings; the other columns (N,); ``sequence_id``, ``position``, ``depth`` optional."""
    token_ids = np.asarray(columns["token_ids"])
    rows, kept = token_ids.shape
    schema = node_schema(kept, file_metadata(vocab_size, **metadata))
    verifier = columns["verifier"]
    verifier = (np.full(rows, verifier, dtype=object) if isinstance(verifier, str)
                else np.asarray(verifier, dtype=object))
    arrays = {
        "node_id": pa.array(np.asarray(columns["node_id"], np.int64)),
        "verifier": pa.array(verifier, pa.string()).dictionary_encode(),
        "candidates": _candidates(columns["candidates"]),
    }
    for name in ("token_ids", "p", "q"):
        value_type = NUMPY_TYPES[schema.field(name).type.value_type]
        flat = pa.array(np.ascontiguousarray(columns[name]).reshape(-1).astype(value_type))
        arrays[name] = pa.FixedSizeListArray.from_arrays(flat, kept)
    for name in ("p_tail", "q_tail", "emitted", "accepted_index", *OPTIONAL_COLUMNS):
        field = schema.field(name)
        arrays[name] = (pa.nulls(rows, field.type) if columns.get(name) is None
                        else pa.array(np.asarray(columns[name]).astype(NUMPY_TYPES[field.type]), field.type))
    return pa.Table.from_arrays([arrays[name] for name in schema.names], schema=schema)


def _candidates(candidates: np.ndarray | list[np.ndarray]) -> pa.Array:
    if isinstance(candidates, np.ndarray) and candidates.ndim == 2:
        counts = (candidates >= 0).sum(axis=1)
        flat = candidates[candidates >= 0]
    else:
        counts = np.array([len(row) for row in candidates])
        flat = np.concatenate([np.asarray(row) for row in candidates]) if len(candidates) else np.zeros(0)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat.astype(np.int32)))


def write_nodes(path: str | Path, table: pa.Table, rows_per_group: int) -> Path:
    """Write ``table`` (checked row group by row group first) as one zstd-compressed Parquet file of row groups of
    ``rows_per_group`` rows (the serving tools' default: ``resispec.sim.serving.defaults.ROWS_PER_GROUP``), through
    ``resispec.formats.atomic.atomic_path`` (a failed write leaves what was at ``path``)."""
    path = Path(path)
    _, vocab_size = check_schema(table.schema, str(path))
    for start in range(0, table.num_rows, rows_per_group):
        NodeBatch(table.slice(start, rows_per_group), vocab_size, f"{path} rows from {start}")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temporary:
        pq.write_table(table, temporary, row_group_size=rows_per_group, compression="zstd")
    return path
