"""Conversion between the ``.npz`` logged-pairs format (``resispec-pairs/1``, ``resispec.formats.pairs``) and the
Parquet layout (``resispec-nodes/1``).

- ``.npz`` -> Parquet: the log must carry decisions (``candidates``, ``emitted``, ``accepted_index``);
  the verifier's name is given (the ``.npz`` format does not record it). A dense log becomes M = V
  kept ids (``0..V-1``) with zero tails. ``chain`` -> ``sequence_id``, ``position`` and ``depth`` as
  they are; node ids are the row numbers (plus ``first_node_id``). One draft is carried (``q`` by
  default); the metadata strings and the temperature go to the file metadata.
- Parquet -> ``.npz``: every row of a file or directory (files in sorted order), candidates padded
  with -1 to the largest k, the verifier's name(s) in ``note``; the ``.npz`` checks apply (e.g. every
  candidate must be a kept id, which Parquet does not require).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from resispec.formats.node_reader import read_metadata, read_unit, units
from resispec.formats.node_writer import nodes_table, write_nodes
from resispec.formats.nodes import SchemaError, check_schema
from resispec.formats.pairs import FORMAT as NPZ_FORMAT
from resispec.formats.pairs import logged_pairs, read_logged, write_logged
from resispec.sim.serving.defaults import ROWS_PER_GROUP
from resispec.verifiers import VERIFIERS


def npz_to_parquet(source: str | Path, out: str | Path, verifier: str, draft: str = "q", first_node_id: int = 0,
                   rows_per_group: int = ROWS_PER_GROUP) -> Path:
    """Write the ``.npz`` log ``source`` as one Parquet file ``out``."""
    if verifier not in VERIFIERS:
        raise ValueError(f"verifier: unknown {verifier!r}; known: {', '.join(VERIFIERS)}")
    pairs = read_logged(source)
    if not pairs.decisions:
        raise ValueError(f"{source}: the log has no decisions (candidates, emitted, accepted_index) to audit")
    if draft not in pairs.drafts:
        raise ValueError(f"draft: {source} has drafts {', '.join(pairs.drafts)}, not {draft!r}")
    q, q_tail = pairs.drafts[draft]
    rows = len(pairs)
    if pairs.sparse:
        token_ids, p_tail = pairs.token_ids, pairs.p_tail
    else:
        token_ids = np.broadcast_to(np.arange(pairs.vocab_size), pairs.p.shape)
        p_tail = q_tail = np.zeros(rows)
    columns = {"node_id": first_node_id + np.arange(rows), "verifier": verifier, "token_ids": token_ids,
               "p": pairs.p, "q": q, "p_tail": p_tail, "q_tail": q_tail, **pairs.decisions,
               "sequence_id": pairs.ids.get("chain"), "position": pairs.ids.get("position"),
               "depth": pairs.ids.get("depth")}
    metadata = {key: value for key, value in pairs.metadata.items()}
    metadata["note"] = "; ".join(filter(None, [str(metadata.get("note", "")), f"converted from {Path(source).name}"]))
    return write_nodes(out, nodes_table(columns, pairs.vocab_size, **metadata), rows_per_group)


def parquet_to_npz(source: str | Path, out: str | Path) -> Path:
    """Write every row under ``source`` (a file or a directory of shards) as one ``.npz`` log ``out``.

    The set is read by the one reader (``resispec.formats.node_reader``: every row group checked, node
    ids unique, a manifest honoured); the first bad file or row group refuses it, and so does a set
    without rows."""
    found, bad = units(source)
    if bad:
        raise SchemaError(bad[0][1])
    if not sum(unit.rows for unit in found):
        raise ValueError(f"source: {source} holds no rows to convert")
    tables, vocab_sizes = [], set()
    for unit in found:
        read_unit(unit)  # every row checked
        handle = pq.ParquetFile(unit.path)
        vocab_sizes.add(check_schema(handle.schema_arrow, unit.path)[1])
        tables.append(handle.read_row_group(unit.row_group))
    files = sorted({unit.path for unit in found})
    if len(vocab_sizes) > 1 or len({table.schema.field("token_ids").type for table in tables}) > 1:
        raise ValueError(f"source: the files under {source} differ in vocabulary or kept ids per row")
    table = pa.concat_tables(tables)
    kept = table.schema.field("token_ids").type.list_size

    def matrix(name: str) -> np.ndarray:
        return table.column(name).combine_chunks().flatten().to_numpy().reshape(table.num_rows, kept)

    candidates = table.column("candidates").to_pylist()
    width = max(len(row) for row in candidates)
    padded = np.array([row + [-1] * (width - len(row)) for row in candidates], dtype=np.int64)
    fields = {"format": np.array(NPZ_FORMAT), "token_ids": matrix("token_ids").astype(np.int64),
              "p": matrix("p"), "q": matrix("q"), "vocab_size": np.array(vocab_sizes.pop()),
              "candidates": padded}
    for name in ("p_tail", "q_tail", "emitted", "accepted_index"):
        fields[name] = table.column(name).to_numpy()
    for name, column in (("chain", "sequence_id"), ("position", "position"), ("depth", "depth")):
        if table.column(column).null_count == 0:
            fields[name] = table.column(column).to_numpy().astype(np.int64)
    if ("chain" in fields) != ("position" in fields):
        fields.pop("chain", None), fields.pop("position", None)
    metadata = read_metadata(files[0])
    verifiers = sorted(set(table.column("verifier").to_pylist()))
    notes = [metadata.get("note", ""), f"verifier {', '.join(verifiers)}; converted from {Path(source).name}"]
    fields["note"] = np.array("; ".join(filter(None, notes)))
    for key in ("model", "draft_model"):
        if key in metadata:
            fields[key] = np.array(metadata[key])
    if "temperature" in metadata:
        fields["temperature"] = np.array(float(metadata["temperature"]))
    write_logged(out, logged_pairs(str(out), **fields))
    return Path(out)
