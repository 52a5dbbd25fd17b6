"""The one reader of logged-node sets (``resispec-nodes/1``, ``resispec.formats.nodes``): every file, row
group and row checked at the boundary, every error one line naming the file, the row group, the row and
the field.

A *set* is one Parquet file or a folder of them (``*.parquet`` files below it, hidden names left out: they
are files being written, ``resispec.formats.atomic``); a Parquet *dataset* folder (a folder named ``*.parquet``
holding part files, what Spark and Ray write) is a folder like any other, alone or inside a set. Before any
row is audited:

- every file's schema is checked (``check_schema``: format version, vocabulary, column types);
- a folder holding a ``MANIFEST`` (written by ``resispec log synth``: the run id, the rows, the shards and
  their rows) must hold exactly the shards it lists, with their row counts; a folder marked as a staging
  folder (``STAGING_MARKER``: an interrupted write) is refused; a mixed or incomplete set is refused
  whole, never audited as one;
- node ids are unique across the set (one node counted twice would weigh twice): the row group where an
  id repeats one seen before (in sorted file order) is bad.

Each row group is then read and checked row by row (``NodeBatch``) by ``read_unit``. Bad files and row
groups are returned as ``(where, problem)`` so that a caller can refuse the set on the first one or, asked
to, skip exactly those and count them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from resispec.formats.atomic import STAGING_MARKER, atomic_write_text
from resispec.formats.nodes import FORMAT, NodeBatch, SchemaError, check_schema

MANIFEST = "_manifest.json"
"""A leading underscore, like Spark's ``_SUCCESS``: pyarrow's dataset readers skip the file when reading the folder."""
MANIFEST_FORMAT = f"{FORMAT} set"


@dataclass(frozen=True)
class Unit:
    """One row group of one file: the unit of work of every runner."""

    path: str
    row_group: int
    rows: int

    @property
    def origin(self) -> str:
        return f"{self.path} row group {self.row_group}"


def shard_files(path: str | Path) -> list[Path]:
    """The Parquet files of ``path``: the file itself, or every ``*.parquet`` under the folder (sorted,
    hidden names left out); ``SchemaError`` for a staging folder (an interrupted write)."""
    path = Path(path)
    if path.is_dir():
        if (path / STAGING_MARKER).exists():
            raise SchemaError(f"path: {path} is a staging folder, an incomplete set left by an interrupted write")
        files = sorted(file for file in path.rglob("*.parquet") if file.is_file()  # not a dataset folder itself
                       and not any(part.startswith(".") for part in file.relative_to(path).parts))
        if not files:
            raise ValueError(f"path: no .parquet files under {path}")
        return files
    if not path.is_file():
        raise ValueError(f"path: {path} is neither a file nor a directory")
    return [path]


def write_manifest(folder: str | Path, run_id: str, shards: list[tuple[str, int]]) -> Path:
    """``folder/MANIFEST``: the run id, the total rows and ``(file name, rows)`` of every shard."""
    record = {"format": MANIFEST_FORMAT, "run_id": run_id, "rows": sum(rows for _, rows in shards),
              "shards": [{"file": name, "rows": rows} for name, rows in shards]}
    return atomic_write_text(Path(folder) / MANIFEST, json.dumps(record, indent=2) + "\n")


def _check_manifest(folder: Path, rows_by_file: dict[str, int]) -> None:
    """``SchemaError`` unless ``folder``'s manifest (if any) lists exactly the shards found, with their rows."""
    path = folder / MANIFEST
    if not path.exists():
        return
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        listed = {shard["file"]: int(shard["rows"]) for shard in record["shards"]}
        total, run = int(record["rows"]), record["run_id"]
    except (ValueError, KeyError, TypeError) as error:
        raise SchemaError(f"{path}: not a {MANIFEST_FORMAT} manifest ({type(error).__name__}: {error})") from None
    extra = sorted(set(rows_by_file) - set(listed))
    missing = sorted(set(listed) - set(rows_by_file))
    changed = sorted(name for name in set(listed) & set(rows_by_file) if listed[name] != rows_by_file[name])
    if extra or missing or changed or total != sum(listed.values()):
        problem = (f"{extra[0]} is not part of run {run}" if extra else f"{missing[0]} of run {run} is missing"
                   if missing else f"{changed[0]} holds {rows_by_file[changed[0]]} rows, the manifest says "
                   f"{listed[changed[0]]}" if changed else f"the manifest's rows {total} are not its shards' sum")
        raise SchemaError(f"{folder}: a mixed or incomplete set: {problem} ({MANIFEST})")


def _repeated_ids(found: list[Unit]) -> dict[Unit, str]:
    """The row groups holding a node id seen before (in unit order), each with the first repeat named."""
    ids, owners = [], []
    for index, unit in enumerate(found):
        column = pq.ParquetFile(unit.path).read_row_group(unit.row_group, columns=["node_id"]).column(0)
        ids.append(column.to_numpy(zero_copy_only=False).astype(np.int64))
        owners.append(np.full(unit.rows, index))
    if not ids:
        return {}
    ids, owners = np.concatenate(ids), np.concatenate(owners)
    rows = np.concatenate([np.arange(unit.rows) for unit in found])
    order = np.argsort(ids, kind="stable")  # stable: the first occurrence in unit order comes first
    repeat = np.flatnonzero(ids[order][1:] == ids[order][:-1]) + 1
    bad: dict[Unit, str] = {}
    for position in repeat:
        at, first = order[position], order[np.searchsorted(ids[order], ids[order][position])]
        unit = found[owners[at]]
        if unit not in bad:
            bad[unit] = (f"{unit.origin}: row {rows[at]}: field node_id: id {ids[at]} repeats "
                         f"{found[owners[first]].origin} row {rows[first]} (node ids must be unique in a set)")
    return bad


def units(path: str | Path) -> tuple[list[Unit], list[tuple[str, str]]]:
    """Every good row group under ``path``, and ``(where, problem)`` for each file whose schema does not
    match (or that Parquet cannot open) and each row group that repeats a node id (module doc);
    ``SchemaError`` for a mixed, incomplete or staging set."""
    files = shard_files(path)
    found, bad, rows_by_file = [], [], {}
    for file in files:
        try:
            metadata = pq.ParquetFile(file).metadata
            check_schema(metadata.schema.to_arrow_schema(), str(file))
        except SchemaError as error:
            bad.append((str(file), str(error)))
            continue
        except (OSError, pa.ArrowException) as error:
            bad.append((str(file), f"{file}: cannot read as Parquet ({error})"))
            continue
        rows_by_file[str(file.relative_to(path)) if Path(path).is_dir() else file.name] = metadata.num_rows
        found += [Unit(str(file), group, metadata.row_group(group).num_rows)
                  for group in range(metadata.num_row_groups)]
    if Path(path).is_dir():
        _check_manifest(Path(path), rows_by_file)
    repeated = _repeated_ids(found)
    bad += [(unit.origin, problem) for unit, problem in repeated.items()]
    return [unit for unit in found if unit not in repeated], bad


def read_unit(unit: Unit) -> NodeBatch:
    """The checked columns of one row group (``SchemaError`` naming the file, row group, row and field)."""
    try:
        handle = pq.ParquetFile(unit.path)
        _, vocab_size = check_schema(handle.schema_arrow, unit.path)
        table = handle.read_row_group(unit.row_group)
    except (OSError, pa.ArrowException) as error:
        raise SchemaError(f"{unit.origin}: cannot read ({error})") from None
    return NodeBatch(table, vocab_size, unit.origin)


def read_metadata(path: str | Path) -> dict[str, str]:
    """The ``resispec.*`` metadata of one file, keys without the prefix."""
    metadata = pq.ParquetFile(path).schema_arrow.metadata or {}
    return {key.decode()[len("resispec."):]: value.decode() for key, value in metadata.items()
            if key.startswith(b"resispec.")}
