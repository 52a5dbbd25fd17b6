"""Logged distribution pairs: the ``.npz`` format (``resispec-pairs/1``), its reader, writer and checks.

One row per logged node (a position of a text, or a node of a draft tree): the target ``p`` and the
draft ``q`` there, stored dense over the vocabulary or sparse (the kept token ids, their
probabilities, and the mass of everything else as a tail). The full specification is in
``docs/sim.md``; in short (N rows, V the vocabulary, M kept ids per sparse row):

- ``format``: the string ``"resispec-pairs/1"``.
- dense: ``p``, ``q`` of shape (N, V). sparse: ``token_ids`` (N, M) distinct ids in
  ``[0, vocab_size)``; ``p``, ``q`` (N, M) their probabilities; ``p_tail``, ``q_tail`` (N,) the mass
  outside them; ``vocab_size`` (scalar).
- each row's mass (plus its tail) is 1 within ``LOG_SUM_TOLERANCE`` (logs are often float32);
  reading renormalises.
- optional: extra drafts ``q_<name>`` (and ``q_<name>_tail`` when sparse); ``chain`` and
  ``position`` (N,) integers, unique pairs, consecutive positions of one chain being successive
  tokens; ``depth`` (N,) the node's depth in a draft tree (0 = first drafted token); metadata
  strings ``model``, ``draft_model``, ``note`` and the number ``temperature``.
- optional decisions, as the engine logs them per verified node: ``candidates`` (N, K) the drafted
  candidate ids in draw order (-1 pads rows with fewer than K), ``emitted`` (N,) the token the
  verifier emitted there, ``accepted_index`` (N,) the accepted candidate's position or -1 (residual).
  In a sparse log every candidate and emitted id is among the row's kept ids.
- optional rounds (format ``resispec-pairs/1`` with round fields, read by ``resispec.sim.rounds``): ``round``,
  ``parent``, ``token`` (N,) integers and the metadata string ``drafting`` (``"iid"`` or ``"wor"``, how
  the children were drawn). The rows of one round are contiguous and numbered as
  ``resispec.sequence.tree`` numbers nodes (root first, a parent before its children, internal nodes
  before leaves); ``parent`` is the parent's index within the round (-1 for the root) and ``token``
  the node's drafted token (-1 for the root). A leaf was never drafted from, so its draft rows are
  all zero (tails too); every internal row's drafts are distributions. A node's token has q > 0 at
  its parent and, in a sparse log, is among its parent's kept ids.

Simulation of a sparse row: the pair over the M kept ids plus one *tail bucket* token carrying
``p_tail`` and ``q_tail`` (an (M + 1)-token pair). Lumping the tail into one token can only raise the
overlap ``sum min(p, q)``, by at most ``min(p_tail, q_tail)``.

``read_logged`` also reads the SmolLM2 file of the project's shared data (2048 kept ids per row,
drafts ``q`` and ``q_weak``), converting it on the fly (``smollm2_fields``).
"""

from __future__ import annotations

import math
import os
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from resispec.formats.atomic import atomic_path
from resispec.limits import MAX_LOGGED_ARRAY_BYTES, MAX_LOGGED_FILE_BYTES, check_limit
from resispec.validation import FLOAT32_SUM_TOLERANCE

FORMAT = "resispec-pairs/1"
LOG_SUM_TOLERANCE = FLOAT32_SUM_TOLERANCE
"""A logged row may sum (with its tail) to ``1 +- LOG_SUM_TOLERANCE`` (1e-4, the float32 tolerance of
``resispec.validation``); it is renormalised on read."""

METADATA_STRINGS = ("model", "draft_model", "note", "drafting")
METADATA_NUMBERS = ("temperature",)
ID_FIELDS = ("chain", "position", "depth")
DECISION_FIELDS = ("candidates", "emitted", "accepted_index")
ROUND_FIELDS = ("round", "parent", "token")
DRAFTING_RULES = ("iid", "wor")
TAIL_MODES = ("merge", "split")
"""How a sparse row's tails become tokens (``resispec.sim.batch.PairBatch.from_logged``)."""


@dataclass(frozen=True)
class LoggedPairs:
    """A validated log. ``drafts`` maps each draft name (``"q"`` first) to ``(values, tail)``
    (``tail`` None when dense). Sparse logs have ``token_ids`` and ``p_tail``; dense ones neither."""

    p: np.ndarray
    drafts: dict[str, tuple[np.ndarray, np.ndarray | None]]
    vocab_size: int
    token_ids: np.ndarray | None = None
    p_tail: np.ndarray | None = None
    ids: dict[str, np.ndarray] = field(default_factory=dict)
    metadata: dict[str, str | float] = field(default_factory=dict)
    decisions: dict[str, np.ndarray] = field(default_factory=dict)
    rounds: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def sparse(self) -> bool:
        return self.token_ids is not None

    @property
    def drafted(self) -> np.ndarray:
        """Rows with a draft distribution: all rows, except the leaves of a round log."""
        if not self.rounds:
            return np.ones(len(self), dtype=bool)
        return has_children(self.rounds["round"], self.rounds["parent"])

    def __len__(self) -> int:
        return self.p.shape[0]

    def tailed(self, draft: str = "q", tail: str = "merge") -> tuple[np.ndarray, np.ndarray]:
        """``(p, q)`` float64 rows with the tail buckets of ``PairBatch.from_logged`` appended (not renormalised;
        a dense log's rows as they are)."""
        if tail not in TAIL_MODES:
            raise ValueError(f"tail: expected one of {', '.join(TAIL_MODES)}, got {tail!r}")
        q, q_tail = self.drafts[draft]
        p, q = _with_tail(self.p, self.p_tail), _with_tail(q, q_tail)
        if tail == "split" and self.sparse:  # buckets (p_tail, 0) then (0, q_tail)
            p = np.pad(p, ((0, 0), (0, 1)))
            q = np.insert(q, q.shape[1] - 1, 0.0, axis=1)
        return p, q

    def fields(self) -> dict[str, np.ndarray]:
        """The arrays of the file format (what ``write_logged`` stores)."""
        fields: dict[str, np.ndarray] = {"format": np.array(FORMAT), "p": self.p}
        for name, (values, tail) in self.drafts.items():
            fields[name] = values
            if tail is not None:
                fields[f"{name}_tail"] = tail
        if self.sparse:
            fields.update(token_ids=self.token_ids, p_tail=self.p_tail, vocab_size=np.array(self.vocab_size))
        fields.update(self.ids)
        fields.update(self.decisions)
        fields.update(self.rounds)
        fields.update({key: np.array(value) for key, value in self.metadata.items()})
        return fields


def has_children(round_ids: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """Per row of a round log, whether the node has children (its round's later rows name it parent)."""
    first = root_rows(round_ids)
    internal = np.zeros(round_ids.size, dtype=bool)
    child = parents >= 0
    internal[(first + parents)[child]] = True
    return internal


def round_starts(round_ids: np.ndarray) -> np.ndarray:
    """The first row of each round (rounds are contiguous runs of equal ``round`` ids)."""
    return np.flatnonzero(np.diff(round_ids, prepend=round_ids[:1] - 1) != 0) if round_ids.size else round_ids


def root_rows(round_ids: np.ndarray) -> np.ndarray:
    """Per row of a round log, the row of its round's root (the round's first row)."""
    starts = round_starts(round_ids)
    return np.repeat(starts, np.diff(np.append(starts, round_ids.size)))


def _with_tail(values: np.ndarray, tail: np.ndarray | None) -> np.ndarray:
    values = values.astype(np.float64)
    return values if tail is None else np.concatenate([values, tail.astype(np.float64)[:, None]], axis=1)


def logged_pairs(origin: str = "logged pairs", **fields: np.ndarray) -> LoggedPairs:
    """Validate the format's fields and build a ``LoggedPairs``.

    Every problem raises ``ValueError`` naming ``origin``, the field and, where it applies, the row.
    """
    return _Checker(origin, {key: np.asarray(value) for key, value in fields.items()}).build()


def write_logged(path: str | Path, pairs: LoggedPairs) -> None:
    """Write ``pairs`` as a compressed ``.npz`` archive at exactly ``path`` (checked again on the way out;
    no ``.npz`` suffix is appended, so the file is where the caller reports it), through
    ``resispec.formats.atomic.atomic_path``: a failed write leaves what was at ``path``."""
    fields = pairs.fields()
    logged_pairs(str(path), **fields)
    with atomic_path(path) as temporary:
        with open(temporary, "wb") as handle:
            np.savez_compressed(handle, **fields)


def read_logged(path: str | Path) -> LoggedPairs:
    """Read and validate a logged-pairs file (or the shared SmolLM2 file, converted)."""
    fields = read_archive(path)
    if "format" not in fields and set(fields) == set(SMOLLM2_FIELDS):
        fields = smollm2_fields(fields)
    return logged_pairs(str(path), **fields)


def read_archive(path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` archive at ``path``, by name; a ``ValueError`` for anything else.

    Before anything is decompressed: the file is at most ``MAX_LOGGED_FILE_BYTES``, a zip archive of
    ``.npy`` members only, each with a version 1 or 2 header of a non-object dtype (no pickles), and
    the sizes the headers declare sum to at most ``MAX_LOGGED_ARRAY_BYTES`` (a 1 kB file can declare
    hundreds of GiB). Then a truncated or corrupt member is reported, not raised as whatever NumPy or
    zipfile throws (EOFError, BadZipFile, ...).
    """
    try:
        size = os.path.getsize(path)
    except OSError as error:
        raise ValueError(f"{path}: cannot read ({error.strerror})") from None
    check_limit(size, MAX_LOGGED_FILE_BYTES, str(path), "the file size in bytes")
    with _reporting_corruption(path):
        with zipfile.ZipFile(path) as archive:
            declared = sum(_declared_bytes(archive, info) for info in archive.infolist())
    check_limit(declared, MAX_LOGGED_ARRAY_BYTES, str(path), "the bytes its arrays declare")
    with _reporting_corruption(path), np.load(path, allow_pickle=False) as arrays:
        return {key: arrays[key] for key in arrays.files}


@contextmanager
def _reporting_corruption(path: str | Path) -> Iterator[None]:
    """Turn whatever a truncated or corrupt archive raises into one ``ValueError`` naming ``path``."""
    try:
        yield
    except (OSError, EOFError, zipfile.BadZipFile, zlib.error, ValueError) as error:
        raise ValueError(
            f"{path}: not a readable logged-pairs .npz archive ({type(error).__name__}: {error})") from None


def _declared_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
    """The bytes the ``.npy`` header of one archive member declares (its data is not read)."""
    if not info.filename.endswith(".npy"):
        raise ValueError(f"member {info.filename!r} is not an .npy array")
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version not in readers:
            raise ValueError(f"member {info.filename!r}: unsupported .npy version {version}")
        shape, _, dtype = readers[version](member)
    if dtype.hasobject:
        raise ValueError(f"member {info.filename!r} holds Python objects (a pickle), which are never loaded")
    return math.prod(shape) * dtype.itemsize


def shrink(pairs: LoggedPairs, rows: int, keep: int) -> LoggedPairs:
    """The first ``rows`` rows of a sparse log, each cut to its ``keep`` ids of largest ``p + q``
    (ascending ids); the dropped mass of every draft moves into the tails. Decision fields are not
    carried over (their ids may be among the dropped ones)."""
    if not pairs.sparse:
        raise ValueError("shrink: only sparse logs can drop tokens into the tail")
    if pairs.rounds:
        raise ValueError("shrink: a round log's rows cannot be cut (a round's tokens must stay among the kept ids)")
    if keep < 1:
        raise ValueError(f"keep: must be >= 1, got {keep}")
    head = slice(0, rows)
    score = pairs.p[head] + pairs.drafts["q"][0][head]
    chosen = np.sort(np.argsort(-score, axis=1, kind="stable")[:, :keep], axis=1)

    def cut(values: np.ndarray, tail: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        kept = np.take_along_axis(values[head], chosen, axis=1)
        dropped = values[head].astype(np.float64).sum(axis=1) - kept.astype(np.float64).sum(axis=1)
        return kept, tail[head] + np.maximum(dropped, 0.0)

    p, p_tail = cut(pairs.p, pairs.p_tail)
    drafts = {name: cut(values, tail) for name, (values, tail) in pairs.drafts.items()}
    metadata = dict(pairs.metadata)
    metadata["note"] = "; ".join(filter(None, [str(metadata.get("note", "")),
                                               f"shrunk to the first {len(p)} rows and {keep} ids per row"]))
    return LoggedPairs(p, drafts, pairs.vocab_size, np.take_along_axis(pairs.token_ids[head], chosen, axis=1),
                       p_tail, {name: ids[head] for name, ids in pairs.ids.items()}, metadata)


SMOLLM2_FIELDS = ("token_ids", "p", "q", "q_weak", "p_tail", "q_tail", "q_weak_tail")
SMOLLM2_VOCAB = 49152
TAIL_ROUNDING = 1e-6
"""The shared file stores tails as ``1 - sum(kept)``; values down to ``-TAIL_ROUNDING`` are rounding."""


def smollm2_fields(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The shared SmolLM2 arrays in this format: tails clipped at 0 (they are ``1 - sum``, so rounding
    makes some slightly negative), the vocabulary size and the model metadata added, and the 96 rows
    taken as consecutive positions of one chain (the file's README: positions of one sampled text)."""
    fields = dict(arrays)
    for name in ("p_tail", "q_tail", "q_weak_tail"):
        tail = np.asarray(arrays[name], dtype=np.float64)
        if tail.min() < -TAIL_ROUNDING:
            row = int(np.argmin(tail))
            raise ValueError(f"field {name!r} row {row}: tail mass {tail[row]:.3g} is negative beyond rounding")
        fields[name] = np.maximum(tail, 0.0)
    rows = arrays["p"].shape[0]
    fields.update(
        format=np.array(FORMAT), vocab_size=np.array(SMOLLM2_VOCAB),
        chain=np.zeros(rows, dtype=np.int64), position=np.arange(rows, dtype=np.int64),
        model=np.array("SmolLM2-135M-Instruct"), temperature=np.array(1.0),
        draft_model=np.array("SmolLM2-135M-Instruct's own early layers: q = layer 27 of 30, q_weak = layer 24"),
        note=np.array("2048 ids of largest p + q kept per row; rows taken as consecutive positions of one text"),
    )
    return fields


class _Checker:
    """Checks one set of format fields; errors read ``origin: field 'name' row r: problem``."""

    def __init__(self, origin: str, fields: dict[str, np.ndarray]) -> None:
        self.origin = origin
        self.fields = fields

    def fail(self, name: str, problem: str, row: int | None = None) -> None:
        where = f"field {name!r}" + ("" if row is None else f" row {row}")
        raise ValueError(f"{self.origin}: {where}: {problem}")

    def require(self, name: str) -> np.ndarray:
        if name not in self.fields:
            self.fail(name, "missing (required)")
        return self.fields[name]

    def build(self) -> LoggedPairs:
        format_name = self.require("format")
        if format_name.shape != () or str(format_name) != FORMAT:
            self.fail("format", f"expected {FORMAT!r}, got {format_name!r}")
        p = self.values("p", None)
        rows = p.shape[0]
        sparse = "token_ids" in self.fields
        draft_names = [name for name in self.fields
                       if name == "q" or (name.startswith("q_") and not name.endswith("_tail"))]
        self.require("q")
        known = {"format", "p", *draft_names, *ID_FIELDS, *DECISION_FIELDS, *ROUND_FIELDS, *METADATA_STRINGS,
                 *METADATA_NUMBERS}
        if sparse:
            known |= {"token_ids", "vocab_size", "p_tail", *(f"{name}_tail" for name in draft_names)}
        unknown = sorted(set(self.fields) - known)
        if unknown:
            self.fail(unknown[0], "not part of the format" + ("" if sparse else " (tails and vocab_size belong "
                                                              "to sparse logs, which have token_ids)"))
        vocab_size = self.vocabulary(p, sparse)
        token_ids = self.token_ids(p.shape, vocab_size) if sparse else None
        p_tail = self.tail("p_tail", rows) if sparse else None
        self.sums("p", p, p_tail)
        rounds = self.rounds(rows, vocab_size)
        drafted = has_children(rounds["round"], rounds["parent"]) if rounds else np.ones(rows, dtype=bool)
        drafts = {}
        for name in ["q", *sorted(set(draft_names) - {"q"})]:
            values = self.values(name, p.shape)
            tail = self.tail(f"{name}_tail", rows) if sparse else None
            self.sums(name, values, tail, drafted)
            drafts[name] = (values, tail)
        if rounds:
            self.round_tokens(rounds, drafts["q"][0], token_ids)
        metadata = self.metadata()
        if (rounds or "drafting" in metadata) and metadata.get("drafting") not in DRAFTING_RULES:
            self.fail("drafting", f"a round log names its drafting rule ({' or '.join(DRAFTING_RULES)}), "
                                  f"got {metadata.get('drafting')!r}")
        return LoggedPairs(p, drafts, vocab_size, token_ids, p_tail, self.ids(rows), metadata,
                           self.decisions(rows, vocab_size, token_ids), rounds)

    def values(self, name: str, shape: tuple[int, ...] | None) -> np.ndarray:
        values = self.require(name)
        if not np.issubdtype(values.dtype, np.floating):
            self.fail(name, f"expected floating-point probabilities, got dtype {values.dtype}")
        if values.ndim != 2 or 0 in values.shape:
            self.fail(name, f"expected a non-empty 2-D array (rows, tokens), got shape {values.shape}")
        if shape is not None and values.shape != shape:
            self.fail(name, f"shape {values.shape} differs from p's {shape}")
        self.entries(name, values)
        return values

    def entries(self, name: str, values: np.ndarray) -> None:
        bad = ~np.isfinite(values) | (values < 0)
        if bad.any():
            row, column = (int(index[0]) for index in np.nonzero(bad.reshape(values.shape[0], -1)))
            entry = values.reshape(values.shape[0], -1)[row, column]
            self.fail(name, f"entry {column} is {float(entry)}; probabilities must be finite and >= 0", row)

    def tail(self, name: str, rows: int) -> np.ndarray:
        tail = self.require(name)
        if tail.shape != (rows,) or not np.issubdtype(tail.dtype, np.floating):
            self.fail(name, f"expected {rows} floating-point tail masses (shape ({rows},)), got "
                            f"{tail.dtype} of shape {tail.shape}")
        bad = ~np.isfinite(tail) | (tail < 0)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            self.fail(name, f"tail mass {float(tail[row])} must be finite and >= 0", row)
        return tail

    def sums(self, name: str, values: np.ndarray, tail: np.ndarray | None, drafted: np.ndarray | None = None) -> None:
        """Each row sums to 1 (with its tail); rows not ``drafted`` (a round's leaves) are all zero."""
        totals = values.astype(np.float64).sum(axis=1) + (0.0 if tail is None else tail)
        if drafted is not None and (totals[~drafted] != 0).any():
            row = int(np.flatnonzero(~drafted & (totals != 0))[0])
            self.fail(name, "a round's leaf was not drafted from: its draft row (and tail) must be all zero", row)
        off = np.abs(totals - 1.0) > LOG_SUM_TOLERANCE
        if drafted is not None:
            off &= drafted
        if off.any():
            row = int(np.flatnonzero(off)[0])
            self.fail(name, f"sums to {totals[row]:.9g}" + (" with its tail" if tail is not None else "")
                      + f", off from 1 by more than {LOG_SUM_TOLERANCE:g}", row)

    def vocabulary(self, p: np.ndarray, sparse: bool) -> int:
        if not sparse:
            return p.shape[1]
        size = self.require("vocab_size")
        if size.shape != () or not np.issubdtype(size.dtype, np.integer):
            self.fail("vocab_size", f"expected one integer, got {size.dtype} of shape {size.shape}")
        if int(size) < p.shape[1]:
            self.fail("vocab_size", f"{int(size)} is smaller than the {p.shape[1]} kept ids per row")
        return int(size)

    def token_ids(self, shape: tuple[int, ...], vocab_size: int) -> np.ndarray:
        ids = self.require("token_ids")
        if ids.shape != shape or not np.issubdtype(ids.dtype, np.integer):
            self.fail("token_ids", f"expected integers of p's shape {shape}, got {ids.dtype} of shape {ids.shape}")
        outside = (ids < 0) | (ids >= vocab_size)
        if outside.any():
            row, column = (int(index[0]) for index in np.nonzero(outside))
            self.fail("token_ids", f"id {ids[row, column]} is outside the vocabulary [0, {vocab_size})", row)
        ordered = np.sort(ids, axis=1)
        repeated = (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
        if repeated.any():
            row = int(np.flatnonzero(repeated)[0])
            duplicate = ordered[row, 1:][ordered[row, 1:] == ordered[row, :-1]][0]
            self.fail("token_ids", f"id {duplicate} appears more than once", row)
        return ids

    def ids(self, rows: int) -> dict[str, np.ndarray]:
        ids = {}
        for name in ID_FIELDS:
            if name in self.fields:
                values = self.fields[name]
                if values.shape != (rows,) or not np.issubdtype(values.dtype, np.integer):
                    self.fail(name, f"expected {rows} integers (shape ({rows},)), "
                                    f"got {values.dtype} of shape {values.shape}")
                if name == "depth" and values.min() < 0:
                    self.fail(name, f"depth {values.min()} is negative", int(np.argmin(values)))
                ids[name] = values.astype(np.int64)
        if ("chain" in ids) != ("position" in ids):
            self.fail("chain" if "chain" not in ids else "position", "chain and position come together")
        if "chain" in ids:
            keys = np.stack([ids["chain"], ids["position"]], axis=1)
            _, first, counts = np.unique(keys, axis=0, return_index=True, return_counts=True)
            if (counts > 1).any():
                row = int(first[np.flatnonzero(counts > 1)[0]])
                self.fail("position", f"(chain {keys[row, 0]}, position {keys[row, 1]}) appears more than once", row)
        return ids

    def decisions(self, rows: int, vocab_size: int, token_ids: np.ndarray | None) -> dict[str, np.ndarray]:
        present = [name for name in DECISION_FIELDS if name in self.fields]
        if not present:
            return {}
        if len(present) != len(DECISION_FIELDS):
            missing = sorted(set(DECISION_FIELDS) - set(present))[0]
            self.fail(missing, f"{', '.join(DECISION_FIELDS)} come together")
        candidates, emitted, index = (self.fields[name] for name in DECISION_FIELDS)
        if (candidates.ndim != 2 or candidates.shape[0] != rows or candidates.shape[1] == 0
                or not np.issubdtype(candidates.dtype, np.integer)):
            self.fail("candidates", f"expected integers of shape ({rows}, K), K >= 1, got {candidates.dtype} of shape "
                                    f"{candidates.shape}")
        for name, values in (("emitted", emitted), ("accepted_index", index)):
            if values.shape != (rows,) or not np.issubdtype(values.dtype, np.integer):
                self.fail(name, f"expected {rows} integers (shape ({rows},)), "
                                f"got {values.dtype} of shape {values.shape}")
        padded = candidates < 0
        bad = (padded[:, :-1] & ~padded[:, 1:]).any(axis=1) | (candidates >= vocab_size).any(axis=1) | padded[:, 0]
        if bad.any():
            self.fail("candidates", "ids must lie in the vocabulary, with -1 padding only at the end",
                      int(np.flatnonzero(bad)[0]))
        counts = (~padded).sum(axis=1)
        bad = (index < -1) | (index >= counts)
        bad |= (index >= 0) & (np.take_along_axis(candidates, np.maximum(index, 0)[:, None], axis=1)[:, 0] != emitted)
        if bad.any():
            self.fail("accepted_index", "must be -1 or the position of the emitted candidate",
                      int(np.flatnonzero(bad)[0]))
        if token_ids is not None:
            kept = [set(row) for row in token_ids.tolist()]
            for row, (ids, token) in enumerate(zip(candidates.tolist(), emitted.tolist())):
                if not {token, *(x for x in ids if x >= 0)} <= kept[row]:
                    self.fail("candidates", "every candidate and the emitted id must be among the kept token_ids", row)
        elif ((emitted < 0) | (emitted >= vocab_size)).any():
            outside = (emitted < 0) | (emitted >= vocab_size)
            self.fail("emitted", "outside the vocabulary", int(np.flatnonzero(outside)[0]))
        return {name: self.fields[name].astype(np.int64) for name in DECISION_FIELDS}

    def rounds(self, rows: int, vocab_size: int) -> dict[str, np.ndarray]:
        """The round fields' structure: contiguous rounds, each a tree numbered as ``resispec.sequence``
        numbers nodes (``parent`` within the round, -1 only at its first row; internal nodes first)."""
        present = [name for name in ROUND_FIELDS if name in self.fields]
        if not present:
            return {}
        if len(present) != len(ROUND_FIELDS):
            self.fail(sorted(set(ROUND_FIELDS) - set(present))[0], f"{', '.join(ROUND_FIELDS)} come together")
        for name in ROUND_FIELDS:
            values = self.fields[name]
            if values.shape != (rows,) or not np.issubdtype(values.dtype, np.integer):
                self.fail(name, f"expected {rows} integers (shape ({rows},)), "
                                f"got {values.dtype} of shape {values.shape}")
        round_ids, parents, tokens = (self.fields[name].astype(np.int64) for name in ROUND_FIELDS)
        starts = round_starts(round_ids)
        _, first_seen = np.unique(round_ids[starts], return_index=True)
        if first_seen.size != starts.size:
            row = int(starts[np.setdiff1d(np.arange(starts.size), first_seen)[0]])
            self.fail("round", f"round {round_ids[row]}'s rows are not contiguous", row)
        local = np.arange(rows) - root_rows(round_ids)
        root = local == 0
        bad = root & (parents != -1)
        if bad.any():
            self.fail("parent", "a round's first row is its root: parent -1", int(np.flatnonzero(bad)[0]))
        bad = ~root & ((parents < 0) | (parents >= local))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            self.fail("parent", f"{parents[row]} is not an earlier node of the round (0 <= parent < {local[row]}; "
                                "a later one would allow a cycle)", row)
        bad = (root & (tokens != -1)) | (~root & ((tokens < 0) | (tokens >= vocab_size)))
        if bad.any():
            self.fail("token", f"-1 at a round's root, else an id in [0, {vocab_size})", int(np.flatnonzero(bad)[0]))
        internal = has_children(round_ids, parents)
        bad = ~root & internal & ~np.roll(internal, 1)
        if bad.any():
            self.fail("parent", "a round numbers its internal nodes (those with children) before its leaves",
                      int(np.flatnonzero(bad)[0]))
        return {"round": round_ids, "parent": parents, "token": tokens}

    def round_tokens(self, rounds: dict[str, np.ndarray], q: np.ndarray, token_ids: np.ndarray | None) -> None:
        """Every drafted token is a kept id of its parent's row (sparse) with q > 0 there."""
        round_ids, parents, tokens = (rounds[name] for name in ROUND_FIELDS)
        first = root_rows(round_ids)
        for row in np.flatnonzero(parents >= 0).tolist():
            parent_row, token = int(first[row] + parents[row]), int(tokens[row])
            if token_ids is None:
                mass = q[parent_row, token]
            else:
                column = np.flatnonzero(token_ids[parent_row] == token)
                if column.size == 0:
                    self.fail("token", f"{token} is not among its parent's (row {parent_row}) kept token_ids", row)
                mass = q[parent_row, column[0]]
            if not mass > 0:
                self.fail("token", f"{token} has q = 0 at its parent (row {parent_row}): "
                                   "it cannot have been drafted", row)

    def metadata(self) -> dict[str, str | float]:
        metadata: dict[str, str | float] = {}
        for name in METADATA_STRINGS:
            if name in self.fields:
                value = self.fields[name]
                if value.shape != () or value.dtype.kind != "U":
                    self.fail(name, f"expected one string, got {value.dtype} of shape {value.shape}")
                metadata[name] = str(value)
        for name in METADATA_NUMBERS:
            if name in self.fields:
                value = self.fields[name]
                if value.shape != () or value.dtype.kind not in "fiu" or not float(value) > 0:
                    self.fail(name, f"expected one positive number, got {value!r}")
                metadata[name] = float(value)
        return metadata
