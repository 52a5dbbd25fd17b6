"""The Parquet layout of an engine's audit log of emitted tokens (``resispec-pit/1``), its shards and checks.

One row per token an engine emitted, scored at the moment it was emitted against the processed target row the
engine sampled or verified with (``docs/vllm.md``):

| column | type | meaning |
|---|---|---|
| ``request_id`` | string | the engine's request id |
| ``position`` | int64 | the token's index in the request's sequence (prompt included) |
| ``draft_position`` | int32 | its position in the speculative round (0 = first draft), -1 for plain sampling |
| ``kind`` | string (dictionary) | ``plain``, ``accepted`` (a draft kept), ``recovered`` (after rejection), ``bonus`` |
| ``accepted`` | bool | whether the token is an accepted draft |
| ``token`` | int32 | the emitted id |
| ``p`` | float64 | its probability under the processed target row |
| ``pit`` | float64 | the randomized PIT ``(P(Y < token) + U p) / total`` under that row (float64 CDF, own uniform U) |
| ``batch_size`` | int32 | the requests in the engine step |
| ``params`` | string (dictionary) | a digest of the request's sampling parameters (equal parameters, equal digest) |
| ``step`` | int64 | the logging process's engine step counter |

Under exactness every ``pit`` is Uniform(0, 1), independently, whatever the rows (``resispec.audit.pit``), and no
token has ``p = 0``. The file's key-value metadata holds ``resispec.format`` = ``resispec-pit/1`` and optionally
``resispec.engine`` (e.g. ``vllm 0.32.0``), ``resispec.model``, ``resispec.note``.

Shards: a logger buffers rows and writes each batch of them as one whole file ``pit-<pid>-<n>.parquet`` through
``resispec.formats.atomic.atomic_path`` (a killed writer leaves whole shards and at most a hidden partial file,
which readers never list).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from resispec.formats.atomic import atomic_path

FORMAT = "resispec-pit/1"
FORMAT_KEY = b"resispec.format"
METADATA_KEYS = ("engine", "model", "note")
KINDS = ("plain", "accepted", "recovered", "bonus")
SHARD_PATTERN = "pit-*.parquet"

SCHEMA = pa.schema([
    pa.field("request_id", pa.string(), nullable=False),
    pa.field("position", pa.int64(), nullable=False),
    pa.field("draft_position", pa.int32(), nullable=False),
    pa.field("kind", pa.dictionary(pa.int32(), pa.string()), nullable=False),
    pa.field("accepted", pa.bool_(), nullable=False),
    pa.field("token", pa.int32(), nullable=False),
    pa.field("p", pa.float64(), nullable=False),
    pa.field("pit", pa.float64(), nullable=False),
    pa.field("batch_size", pa.int32(), nullable=False),
    pa.field("params", pa.dictionary(pa.int32(), pa.string()), nullable=False),
    pa.field("step", pa.int64(), nullable=False),
])
COLUMNS = tuple(SCHEMA.names)


class PitLogError(ValueError):
    """A file that is not a whole ``resispec-pit/1`` shard, or rows outside the layout; the message names it."""


def file_metadata(**extra: str) -> dict[bytes, bytes]:
    """The key-value metadata of a shard (the format, and any of ``METADATA_KEYS``)."""
    unknown = sorted(set(extra) - set(METADATA_KEYS))
    if unknown:
        raise ValueError(f"metadata: unknown key {unknown[0]!r}; known: {', '.join(METADATA_KEYS)}")
    metadata = {FORMAT_KEY: FORMAT.encode()}
    metadata.update({f"resispec.{key}".encode(): str(value).encode() for key, value in extra.items()})
    return metadata


def rows_table(columns: dict[str, list], metadata: dict[bytes, bytes]) -> pa.Table:
    """The columns (lists of equal length, named as ``COLUMNS``) as a table of the layout; ``PitLogError`` naming
    the first bad column or value (a kind outside ``KINDS``, a PIT outside [0, 1], a negative p)."""
    missing = [name for name in COLUMNS if name not in columns]
    if missing:
        raise PitLogError(f"rows: missing column {missing[0]!r}")
    kinds = set(columns["kind"]) - set(KINDS)
    if kinds:
        raise PitLogError(f"rows: kind {sorted(kinds)[0]!r} is not one of {', '.join(KINDS)}")
    pit, p = np.asarray(columns["pit"], dtype=np.float64), np.asarray(columns["p"], dtype=np.float64)
    if not np.all((pit >= 0) & (pit <= 1)):
        raise PitLogError(f"rows: a PIT value outside [0, 1] ({pit[~((pit >= 0) & (pit <= 1))][0]!r})")
    if not np.all(p >= 0):
        raise PitLogError(f"rows: a probability that is not >= 0 ({p[~(p >= 0)][0]!r})")
    arrays = [pa.array(columns[field.name], type=field.type.value_type if pa.types.is_dictionary(field.type)
                       else field.type) for field in SCHEMA]
    arrays = [array.dictionary_encode() if pa.types.is_dictionary(field.type) else array
              for array, field in zip(arrays, SCHEMA)]
    return pa.Table.from_arrays(arrays, schema=SCHEMA.with_metadata(metadata))


def write_shard(table: pa.Table, folder: str | Path, index: int) -> Path:
    """Write ``table`` as the whole shard ``folder/pit-<pid>-<index>.parquet`` (atomic); returns its path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"pit-{os.getpid()}-{index:06d}.parquet"
    with atomic_path(path) as temporary:
        pq.write_table(table, temporary)
    return path


def shard_paths(path: str | Path) -> list[Path]:
    """The shards of ``path``: the file itself, or a folder's ``pit-*.parquet`` files in name order (hidden
    partial files of a killed writer are not listed); ``PitLogError`` if there is none."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise PitLogError(f"{path}: no such file or folder")
    shards = sorted(path.glob(SHARD_PATTERN))
    if not shards:
        raise PitLogError(f"{path}: no {SHARD_PATTERN} shard in the folder")
    return shards


def is_pit_log(path: str | Path) -> bool:
    """Whether ``path`` (a file or a folder of shards) holds ``resispec-pit/1`` shards (read from the first
    shard's metadata; False for anything else, including ``resispec-nodes/1`` files)."""
    try:
        first = shard_paths(path)[0]
        return (pq.read_schema(first).metadata or {}).get(FORMAT_KEY) == FORMAT.encode()
    except (PitLogError, OSError, pa.ArrowException):
        return False


def read_shard(path: Path) -> pa.Table:
    """One shard as a table; ``PitLogError`` naming the file if it is unreadable or not of the layout."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as error:
        raise PitLogError(f"{path}: not a readable Parquet file ({type(error).__name__}: {error})") from None
    if (table.schema.metadata or {}).get(FORMAT_KEY) != FORMAT.encode():
        raise PitLogError(f"{path}: not a {FORMAT} file (its resispec.format metadata differs)")
    missing = [name for name in COLUMNS if name not in table.schema.names]
    if missing:
        raise PitLogError(f"{path}: missing column {missing[0]!r} of {FORMAT}")
    return table.select(list(COLUMNS))
