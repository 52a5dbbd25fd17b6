"""The Parquet layout of logged verified nodes (``resispec-nodes/1``) and its checks.

One row per verified node (a position of a text, or a node of a draft tree), M kept token ids per
row (M fixed per file, in the column type):

| column | type | meaning |
|---|---|---|
| ``node_id`` | int64 | unique within the logged set; keys the node's audit randomness |
| ``sequence_id``, ``position`` | int64, nullable | the text (request) and the position in it |
| ``depth`` | int32, nullable | depth in the draft tree (0 = first drafted token) |
| ``verifier`` | string (dictionary) | the verifier's registry name (``resispec.VERIFIERS``) |
| ``token_ids`` | fixed_size_list<int32>[M] | the kept ids, distinct, in ``[0, vocab_size)`` |
| ``p``, ``q`` | fixed_size_list<float32>[M] | target and draft probabilities on them |
| ``p_tail``, ``q_tail`` | float64 | the mass outside the kept ids (each row sums to 1 within ``LOG_SUM_TOLERANCE``) |
| ``candidates`` | list<int32> | the k drafted candidates in draw order |
| ``emitted`` | int32 | the token the verifier emitted |
| ``accepted_index`` | int32 | the accepted candidate's position, or -1 (drawn from the residual) |

A candidate or the emitted id outside the kept ids stands for the *tail bucket*, one category
carrying ``p_tail`` and ``q_tail`` (as ``tail=merge`` in ``resispec.formats.pairs``). The file's key-value
metadata holds ``resispec.format`` = ``resispec-nodes/1``, ``resispec.vocab_size`` and optionally
``resispec.model``, ``resispec.draft_model``, ``resispec.temperature``, ``resispec.note``.

From a serving engine (``from_top_logprobs``): the kept ids are the target's top-M at the node, p on
them ``exp(logprob)``; q on them is the draft's probability where the engine reports it (the draft's
top-M, or its full row gathered on those ids) and 0 elsewhere; ``p_tail = 1 - sum p`` and ``q_tail
= 1 - sum q`` (clipped at 0), so a draft token the log does not cover stays in the tail.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from resispec.formats.pairs import LOG_SUM_TOLERANCE
from resispec.limits import MAX_CANDIDATES
from resispec.verifiers import VERIFIERS

FORMAT = "resispec-nodes/1"
FORMAT_KEY = b"resispec.format"
VOCAB_KEY = b"resispec.vocab_size"
METADATA_KEYS = ("model", "draft_model", "temperature", "note")


class SchemaError(ValueError):
    """A file or row group that does not match the layout; the message names the file (and row group)."""


def node_schema(kept: int, metadata: dict[str, str] | None = None) -> pa.Schema:
    """The Arrow schema for M = ``kept`` ids per row, with the file-level ``metadata`` (bytes keys)."""
    return pa.schema([
        pa.field("node_id", pa.int64(), nullable=False),
        pa.field("sequence_id", pa.int64()),
        pa.field("position", pa.int64()),
        pa.field("depth", pa.int32()),
        pa.field("verifier", pa.dictionary(pa.int32(), pa.string()), nullable=False),
        pa.field("token_ids", pa.list_(pa.int32(), kept), nullable=False),
        pa.field("p", pa.list_(pa.float32(), kept), nullable=False),
        pa.field("q", pa.list_(pa.float32(), kept), nullable=False),
        pa.field("p_tail", pa.float64(), nullable=False),
        pa.field("q_tail", pa.float64(), nullable=False),
        pa.field("candidates", pa.list_(pa.int32()), nullable=False),
        pa.field("emitted", pa.int32(), nullable=False),
        pa.field("accepted_index", pa.int32(), nullable=False),
    ], metadata=metadata)


def file_metadata(vocab_size: int, **extra: str | float) -> dict[bytes, bytes]:
    """The key-value metadata of a file (format, vocabulary size, and any of ``METADATA_KEYS``)."""
    unknown = sorted(set(extra) - set(METADATA_KEYS))
    if unknown:
        raise ValueError(f"metadata: unknown key {unknown[0]!r}; known: {', '.join(METADATA_KEYS)}")
    metadata = {FORMAT_KEY: FORMAT.encode(), VOCAB_KEY: str(int(vocab_size)).encode()}
    metadata.update({f"resispec.{key}".encode(): str(value).encode() for key, value in extra.items()})
    return metadata


def check_schema(schema: pa.Schema, origin: str) -> tuple[int, int]:
    """``(M, vocab_size)`` of a file whose schema is ``schema``; ``SchemaError`` naming ``origin`` otherwise."""
    metadata = schema.metadata or {}
    if metadata.get(FORMAT_KEY) != FORMAT.encode():
        raise SchemaError(f"{origin}: not a {FORMAT} file (metadata resispec.format is "
                          f"{metadata.get(FORMAT_KEY, b'missing').decode(errors='replace')!r})")
    try:
        vocab_size = int(metadata[VOCAB_KEY])
    except (KeyError, ValueError):
        raise SchemaError(f"{origin}: metadata resispec.vocab_size is missing or not an integer") from None
    try:
        kept = schema.field("token_ids").type.list_size
    except (KeyError, AttributeError):
        raise SchemaError(f"{origin}: column token_ids is missing or not a fixed-size list") from None
    expected = node_schema(kept)
    for field in expected:
        if field.name not in schema.names:
            raise SchemaError(f"{origin}: column {field.name!r} is missing")
        found = schema.field(field.name).type
        if not found.equals(field.type):
            raise SchemaError(f"{origin}: column {field.name!r} has type {found}, expected {field.type}")
    extra = sorted(set(schema.names) - set(expected.names))
    if extra:
        raise SchemaError(f"{origin}: column {extra[0]!r} is not part of {FORMAT}")
    if not 1 <= kept <= vocab_size:
        raise SchemaError(f"{origin}: {kept} kept ids per row with a vocabulary of {vocab_size}")
    return kept, vocab_size


class NodeBatch:
    """One row group's columns as NumPy arrays (float64 probabilities), checked on construction.

    ``p`` and ``q`` are (N, M + 1): the kept ids' probabilities then the tail bucket, each row
    renormalised; ``emitted_column`` (N,) indexes those columns, M standing for the tail bucket;
    ``k`` (N,) counts each row's candidates and ``rows_by_k`` maps each k to its rows.
    """

    def __init__(self, table: pa.Table, vocab_size: int, origin: str) -> None:
        self.origin = origin
        columns = {name: table.column(name).combine_chunks() for name in table.column_names}
        self.size = table.num_rows
        kept = table.schema.field("token_ids").type.list_size
        self.node_id = self._plain(columns, "node_id").astype(np.int64)
        self.verifier = np.asarray(columns["verifier"].cast(pa.string()).to_pylist(), dtype=object)
        self.token_ids = self._matrix(columns, "token_ids", kept).astype(np.int64)
        self.p = self._pair(columns, "p", "p_tail", kept)
        self.q = self._pair(columns, "q", "q_tail", kept)
        self.emitted = self._plain(columns, "emitted").astype(np.int64)
        self.accepted_index = self._plain(columns, "accepted_index").astype(np.int64)
        offsets = columns["candidates"].offsets.to_numpy()
        flat = columns["candidates"].flatten().to_numpy(zero_copy_only=False).astype(np.int64)
        self.k = np.diff(offsets)
        self._check_ids(vocab_size, flat)
        self.emitted_column = self._columns(self.emitted)
        self.rows_by_k = {int(k): np.flatnonzero(self.k == k) for k in np.unique(self.k)}
        self._check_decisions(flat, offsets)

    def fail(self, problem: str, row: int | None = None) -> None:
        raise SchemaError(f"{self.origin}: " + ("" if row is None else f"row {row}: ") + problem)

    def _plain(self, columns: dict, name: str) -> np.ndarray:
        column = columns[name]
        if column.null_count:
            self.fail(f"column {name!r} has {column.null_count} null values")
        return column.to_numpy(zero_copy_only=False)

    def _matrix(self, columns: dict, name: str, kept: int) -> np.ndarray:
        column = columns[name]
        if column.null_count or column.flatten().null_count:
            self.fail(f"column {name!r} has null values")
        return column.flatten().to_numpy(zero_copy_only=False).reshape(self.size, kept)

    def _pair(self, columns: dict, name: str, tail_name: str, kept: int) -> np.ndarray:
        values = np.empty((self.size, kept + 1))
        values[:, :kept] = self._matrix(columns, name, kept)
        values[:, kept] = self._plain(columns, tail_name)
        bad = ~np.isfinite(values) | (values < 0)
        if bad.any():
            row = int(np.flatnonzero(bad.any(axis=1))[0])
            self.fail(f"{name} or {tail_name} has an entry that is negative or not finite", row)
        totals = values.sum(axis=1)
        off = np.abs(totals - 1.0) > LOG_SUM_TOLERANCE
        if off.any():
            row = int(np.flatnonzero(off)[0])
            self.fail(f"{name} sums to {totals[row]:.9g} with its tail, off from 1 by more than "
                      f"{LOG_SUM_TOLERANCE:g}", row)
        return values / totals[:, None]

    def _check_ids(self, vocab_size: int, flat: np.ndarray) -> None:
        ids = self.token_ids
        outside = ((ids < 0) | (ids >= vocab_size)).any(axis=1)
        if outside.any():
            self.fail(f"token_ids outside the vocabulary [0, {vocab_size})", int(np.flatnonzero(outside)[0]))
        ordered = np.sort(ids, axis=1)
        repeated = (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
        if repeated.any():
            self.fail("token_ids has a repeated id", int(np.flatnonzero(repeated)[0]))
        if (self.k < 1).any():
            self.fail("no candidates", int(np.flatnonzero(self.k < 1)[0]))
        if (self.k > MAX_CANDIDATES).any():
            row = int(np.flatnonzero(self.k > MAX_CANDIDATES)[0])
            self.fail(f"field candidates: {self.k[row]} candidates, past the limit MAX_CANDIDATES = {MAX_CANDIDATES} "
                      "(resispec.limits)", row)
        for name, values in (("candidates", flat), ("emitted", self.emitted)):
            if ((values < 0) | (values >= vocab_size)).any():
                self.fail(f"{name} has an id outside the vocabulary [0, {vocab_size})")
        unknown = sorted(set(self.verifier) - set(VERIFIERS))
        if unknown:
            self.fail(f"verifier {unknown[0]!r} is not in the registry ({', '.join(VERIFIERS)})")
        self._check_drafting(flat)

    def _check_drafting(self, flat: np.ndarray) -> None:
        """Candidate counts against each verifier's ``max_k``; distinct candidates where its drafting
        draws without replacement (``wor``) or takes the top k (``topk``)."""
        offsets = np.concatenate([[0], np.cumsum(self.k)])
        for name in sorted(set(self.verifier)):
            rule = VERIFIERS[name]
            rows = np.flatnonzero(self.verifier == name)
            if rule.max_k is not None and (self.k[rows] > rule.max_k).any():
                row = int(rows[np.argmax(self.k[rows] > rule.max_k)])
                self.fail(f"field candidates: {self.k[row]} candidates, but {name} takes at most {rule.max_k}", row)
            if rule.drafting in ("wor", "topk"):
                for row in rows:
                    drawn = flat[offsets[row]:offsets[row + 1]]
                    if np.unique(drawn).size < drawn.size:
                        self.fail(f"field candidates: a repeated candidate, but {name} drafts {rule.drafting} "
                                  "(distinct candidates)", int(row))

    def _columns(self, ids: np.ndarray) -> np.ndarray:
        """Column of each row's id (shape (N,)) among its kept ids; M (the tail bucket) where it is not kept."""
        match = self.token_ids == ids[:, None]
        return np.where(match.any(axis=1), match.argmax(axis=1), self.token_ids.shape[1])

    def _check_decisions(self, flat: np.ndarray, offsets: np.ndarray) -> None:
        index = self.accepted_index
        bad = (index < -1) | (index >= self.k)
        inside = np.clip(index, 0, np.maximum(self.k - 1, 0))  # an index past k is bad, not an IndexError
        chosen = flat[offsets[:-1] + inside] if flat.size else np.zeros(0, np.int64)
        bad |= (index >= 0) & (chosen != self.emitted)
        if bad.any():
            self.fail("accepted_index must be -1 or the position of the emitted candidate", int(np.flatnonzero(bad)[0]))


def from_top_logprobs(target_ids: np.ndarray, target_logprobs: np.ndarray, draft_ids: np.ndarray,
                      draft_logprobs: np.ndarray) -> dict[str, np.ndarray]:
    """The ``token_ids``, ``p``, ``q``, ``p_tail``, ``q_tail`` columns from what a serving engine logs:
    the target's top-M ids and log-probabilities (N, M) and the draft's (N, M') at each node.

    Kept ids: the target's top-M. ``p = exp(target_logprobs)``; ``q`` on a kept id is ``exp`` of the
    draft's log-probability where the draft's ids include it, else 0; each tail is ``1 - sum`` over
    the kept ids, clipped at 0 (module docstring)."""
    target_ids, draft_ids = np.asarray(target_ids), np.asarray(draft_ids)
    target_logprobs, draft_logprobs = np.asarray(target_logprobs, np.float64), np.asarray(draft_logprobs, np.float64)
    for name, ids, logprobs in (("target", target_ids, target_logprobs), ("draft", draft_ids, draft_logprobs)):
        if ids.ndim != 2 or ids.shape != logprobs.shape or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"{name}_ids: expected integer ids of the shape of {name}_logprobs (N, M), got "
                             f"{ids.dtype} {ids.shape} against {logprobs.shape}")
        if np.isnan(logprobs).any() or (logprobs > 1e-6).any():
            raise ValueError(f"{name}_logprobs: log-probabilities must be <= 0 and not NaN")
    if target_ids.shape[0] != draft_ids.shape[0]:
        raise ValueError(f"draft_ids: {draft_ids.shape[0]} rows, the target has {target_ids.shape[0]}")
    p = np.exp(np.minimum(target_logprobs, 0.0))
    match = draft_ids[:, None, :] == target_ids[:, :, None]
    q = np.where(match.any(axis=2), np.exp(np.minimum(np.take_along_axis(
        draft_logprobs, match.argmax(axis=2), axis=1), 0.0)), 0.0)
    return {"token_ids": target_ids.astype(np.int32), "p": p.astype(np.float32), "q": q.astype(np.float32),
            "p_tail": np.maximum(1.0 - p.sum(axis=1), 0.0), "q_tail": np.maximum(1.0 - q.sum(axis=1), 0.0)}
