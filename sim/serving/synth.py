"""Synthetic logged sets: LLM-like pairs, the top-M ids kept, and a verifier's real decisions.

Node n of a synthetic set: a pair ``(p, q)`` over V tokens from a synthetic family of ``resispec.sim.sources``
(default ``llm:sigma=1,V=1024``), the M ids of largest p kept (in descending p), the rest lumped into
the tail bucket. The verifier runs on the (M + 1)-token merged pair (kept ids, then the tail bucket),
drawing its candidates and uniforms from the file's stream, exactly as an engine whose vocabulary is
that merged pair would; a tail-bucket candidate is logged as an id of q's tail (drawn from q
restricted to it), a tail-bucket emission from the residual as an id of p's tail (from p restricted
to it). So the emitted category is distributed exactly as the merged p when the verifier is exact,
and the verifier's exact acceptance on the merged pair is the logged set's true acceptance: what
``audit-log`` computes. File f's stream is ``default_rng([seed, f])``; node ids are row numbers plus
``first_node_id`` (sets made to be audited together must not share ids).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from resispec.formats.atomic import staged_directory
from resispec.formats.node_reader import MANIFEST, write_manifest
from resispec.formats.node_writer import nodes_table, write_nodes
from resispec.sim.serving.defaults import ROWS_PER_GROUP, SYNTH_FAMILY, SYNTH_K, SYNTH_KEPT, SYNTH_ROWS_PER_FILE
from resispec.sim.serving.pool import worker_pool
from resispec.sim.sources import parse_source
from resispec.validation import as_count
from resispec.verifiers import get_verifier

PAIR_CHUNK = 4096
"""Pairs drawn at once at small V (a chunk holds two float64 arrays of chunk x V)."""
PAIR_CHUNK_BYTES = 1 << 26
"""At most 64 MiB of pairs at once: ``chunk = min(PAIR_CHUNK, PAIR_CHUNK_BYTES / (16 V))`` (V = 2^20 asked
for 64 GiB with a fixed chunk; up to V = 1024, the default family, the chunk and the stream are unchanged)."""


@dataclass(frozen=True)
class SynthSpec:
    """What to synthesise: ``rows`` nodes of ``verifier`` at ``k`` candidates, M = ``kept`` ids per row."""

    rows: int
    verifier: str
    k: int = SYNTH_K
    kept: int = SYNTH_KEPT
    family: str = SYNTH_FAMILY
    seed: int = 0
    rows_per_file: int = SYNTH_ROWS_PER_FILE
    rows_per_group: int = ROWS_PER_GROUP
    first_node_id: int = 0

    def __post_init__(self) -> None:
        as_count(self.k, "k")  # candidates: at most resispec.limits.MAX_CANDIDATES
        for name in ("rows", "kept", "rows_per_file", "rows_per_group"):
            as_count(getattr(self, name), name, "rows" if name.startswith("rows") else "ids")
        verifier = get_verifier(self.verifier)
        if verifier.max_k is not None and self.k > verifier.max_k:
            raise ValueError(f"k: {self.verifier} takes at most {verifier.max_k} candidate(s), got {self.k}")
        vocab = parse_source(self.family).sample(1, np.random.default_rng(0)).vocab_size
        if self.kept >= vocab:
            raise ValueError(f"kept: must be below the family's vocabulary {vocab}, got {self.kept}")
        for name in ("seed", "first_node_id"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"{name}: expected a non-negative integer, got {value!r}")


def _tail_id(values: np.ndarray, kept_ids: np.ndarray, rng: np.random.Generator) -> int:
    """An id outside ``kept_ids`` drawn from ``values`` restricted to them (uniform if they carry no mass)."""
    weights = values.copy()
    weights[kept_ids] = 0.0
    total = weights.sum()
    if total <= 0:
        weights = np.ones_like(values)
        weights[kept_ids] = 0.0
        total = weights.sum()
    return int(np.searchsorted(np.cumsum(weights), rng.random() * total, side="right").clip(0, values.size - 1))


def synth_file(spec: SynthSpec, index: int, path: Path) -> int:
    """Write file ``index`` of the set (rows ``index * rows_per_file`` onwards); returns its row count."""
    start = index * spec.rows_per_file
    rows = min(spec.rows_per_file, spec.rows - start)
    rng = np.random.default_rng([spec.seed, index])
    family, verifier, m = parse_source(spec.family), get_verifier(spec.verifier), spec.kept
    vocab = family.sample(1, np.random.default_rng(0)).vocab_size
    chunk = max(1, min(PAIR_CHUNK, PAIR_CHUNK_BYTES // (16 * vocab)))
    columns: dict[str, list] = {name: [] for name in ("token_ids", "p", "q", "p_tail", "q_tail", "candidates",
                                                       "emitted", "accepted_index")}
    for chunk_start in range(0, rows, chunk):
        batch = family.sample(min(chunk, rows - chunk_start), rng)
        top = np.argpartition(-batch.p, m - 1, axis=1)[:, :m]
        by_p = np.argsort(-np.take_along_axis(batch.p, top, axis=1), axis=1, kind="stable")
        top = np.take_along_axis(top, by_p, axis=1)
        p_kept, q_kept = np.take_along_axis(batch.p, top, axis=1), np.take_along_axis(batch.q, top, axis=1)
        p_tail, q_tail = 1.0 - p_kept.sum(axis=1), 1.0 - q_kept.sum(axis=1)
        for n in range(len(batch)):
            merged_p = np.append(p_kept[n], max(p_tail[n], 0.0))
            merged_q = np.append(q_kept[n], max(q_tail[n], 0.0))
            bound = verifier.bind(merged_p / merged_p.sum(), merged_q / merged_q.sum(), spec.k)
            drawn = bound.draft(rng)
            token, accepted = bound.verify(drawn, rng.random(verifier.uniforms_needed(spec.k)))
            ids = [int(top[n, c]) if c < m else _tail_id(batch.q[n], top[n], rng) for c in drawn]
            emitted = ids[accepted] if accepted >= 0 else (
                int(top[n, token]) if token < m else _tail_id(batch.p[n], top[n], rng))
            columns["candidates"].append(np.array(ids))
            columns["emitted"].append(emitted)
            columns["accepted_index"].append(accepted)
        columns["token_ids"].append(top)
        columns["p"].append(p_kept)
        columns["q"].append(q_kept)
        columns["p_tail"].append(np.maximum(p_tail, 0.0))
        columns["q_tail"].append(np.maximum(q_tail, 0.0))
    arrays = {name: np.concatenate(columns[name]) for name in ("token_ids", "p", "q", "p_tail", "q_tail")}
    arrays.update(candidates=columns["candidates"], emitted=np.array(columns["emitted"]),
                  accepted_index=np.array(columns["accepted_index"]), verifier=spec.verifier,
                  node_id=spec.first_node_id + np.arange(start, start + rows),
                  sequence_id=np.arange(start, start + rows) // 16,
                  position=np.arange(start, start + rows) % 16)
    table = nodes_table(arrays, vocab, note=f"resispec log synth: {spec.family}, top {m}, {spec.verifier} "
                                           f"at k = {spec.k}, seed {spec.seed}, file {index}")
    write_nodes(path, table, spec.rows_per_group)
    return rows


def synth(spec: SynthSpec, out: str | Path, workers: int = 1,
          progress: Callable[[int], None] | None = None) -> list[Path]:
    """Write the set as ``out/part-00000.parquet``, ... and ``out/manifest.json`` (files in parallel over
    ``workers`` processes); ``progress(rows)`` after each file.

    The files go to a staging folder beside ``out`` that replaces it only once every file and the
    manifest (run id, rows, shards) are written (``resispec.formats.atomic.staged_directory``): a failed
    or interrupted run leaves ``out`` as it was, and a rerun with fewer rows leaves none of the old
    run's shards. ``out`` must be new, empty, or a set written by ``synth`` (holding a manifest)."""
    out = Path(out)
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).exists():
        raise ValueError(f"out: {out} holds files but no {MANIFEST}: not a set written by log synth, so it is not "
                         "replaced; choose a new or empty folder")
    names = [f"part-{index:05d}.parquet" for index in range(-(-spec.rows // spec.rows_per_file))]
    with staged_directory(out) as staging:
        paths = [staging / name for name in names]
        if workers <= 1:
            counts = []
            for index, path in enumerate(paths):
                counts.append(synth_file(spec, index, path))
                if progress:
                    progress(counts[-1])
        else:
            with worker_pool(workers) as pool:
                counts = []
                for rows in pool.map(synth_file, [spec] * len(paths), range(len(paths)), paths):
                    counts.append(rows)
                    if progress:
                        progress(rows)
        write_manifest(staging, uuid.uuid4().hex, list(zip(names, counts)))
    return [out / name for name in names]
