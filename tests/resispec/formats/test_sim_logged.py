"""The logged-pairs format: round trips, the tail bucket, and errors that name the field and row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from resispec.formats.pairs import FORMAT, logged_pairs, read_logged, shrink, write_logged
from resispec.sim.batch import SAMPLE_PATH, PairBatch

SHARED = Path("/work/shared/data/smollm2_pairs.npz")


def sparse_fields(rows: int = 4, kept: int = 5, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.permuted(np.tile(np.arange(20), (rows, 1)), axis=1)[:, :kept], axis=1)
    full_p, full_q, full_w = (rng.dirichlet(np.ones(kept + 1), size=rows) for _ in range(3))
    return {
        "format": np.array(FORMAT), "token_ids": ids, "vocab_size": np.array(20),
        "p": full_p[:, :kept].astype(np.float32), "p_tail": full_p[:, kept],
        "q": full_q[:, :kept].astype(np.float32), "q_tail": full_q[:, kept],
        "q_weak": full_w[:, :kept].astype(np.float32), "q_weak_tail": full_w[:, kept],
        "chain": np.array([0, 0, 1, 1])[:rows], "position": np.array([0, 1, 0, 1])[:rows],
        "depth": np.zeros(rows, dtype=np.int64), "model": np.array("target-model"), "temperature": np.array(0.7),
    }


def test_dense_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    p, q = rng.dirichlet(np.ones(6), size=3), rng.dirichlet(np.ones(6), size=3)
    write_logged(tmp_path / "dense.npz", logged_pairs(format=np.array(FORMAT), p=p, q=q, note=np.array("toy")))
    back = read_logged(tmp_path / "dense.npz")
    assert not back.sparse and back.vocab_size == 6 and back.metadata == {"note": "toy"}
    batch = PairBatch.from_logged(back)
    assert np.allclose(batch.p, p) and np.allclose(batch.q, q)
    assert np.array_equal(batch.chain, np.arange(3))  # no chain ids: every row stands alone


def test_sparse_round_trip_and_the_tail_bucket(tmp_path):
    fields = sparse_fields()
    write_logged(tmp_path / "sparse.npz", logged_pairs(**fields))
    back = read_logged(tmp_path / "sparse.npz")
    assert back.sparse and list(back.drafts) == ["q", "q_weak"]
    assert back.metadata == {"model": "target-model", "temperature": 0.7}
    for name, values in back.fields().items():
        assert np.array_equal(values, fields[name]), name
    batch = PairBatch.from_logged(back, "q_weak")
    assert batch.p.shape == (4, 6)
    assert np.allclose(batch.p[:, -1], fields["p_tail"] / (fields["p"].sum(1) + fields["p_tail"]))
    assert np.allclose(batch.q[:, :-1].sum(1) + batch.q[:, -1], 1.0)
    assert np.array_equal(batch.position, [0, 1, 0, 1])
    with pytest.raises(ValueError, match="drafts q, q_weak"):
        PairBatch.from_logged(back, "q_strong")


def test_tails_merged_and_split_bracket_the_true_overlap():
    """A full pair cut to its kept ids: one shared tail bucket overstates ``sum min(p, q)`` and
    separate buckets understate it, each by at most ``min(p_tail, q_tail)``."""
    from resispec.sim.sources import parse_source

    rng = np.random.default_rng(3)
    full_p, full_q = rng.dirichlet(np.ones(30), size=50), rng.dirichlet(np.ones(30), size=50)
    kept = np.sort(np.argsort(-(full_p + full_q), axis=1)[:, :8], axis=1)
    p, q = np.take_along_axis(full_p, kept, 1), np.take_along_axis(full_q, kept, 1)
    log = logged_pairs(format=np.array(FORMAT), token_ids=kept, vocab_size=np.array(30), p=p, q=q,
                       p_tail=1 - p.sum(1), q_tail=1 - q.sum(1))
    true = np.minimum(full_p, full_q).sum(1)
    merged, split = (PairBatch.from_logged(log, tail=mode) for mode in ("merge", "split"))
    assert merged.p.shape == (50, 9) and split.p.shape == (50, 10)
    overlap_merged, overlap_split = (np.minimum(b.p, b.q).sum(1) for b in (merged, split))
    shared_tail = np.minimum(1 - p.sum(1), 1 - q.sum(1))
    assert (overlap_split <= true + 1e-12).all() and (true <= overlap_merged + 1e-12).all()
    assert (overlap_merged - overlap_split <= shared_tail + 1e-12).all() and (overlap_merged > true + 1e-3).any()
    with pytest.raises(ValueError, match="tail: expected one of merge, split"):
        PairBatch.from_logged(log, tail="drop")
    assert parse_source("logged:sample,tail=split").tail == "split"
    with pytest.raises(ValueError, match="tail must be one of"):
        parse_source("logged:sample,tail=drop")


def broken(change):
    fields = sparse_fields()
    change(fields)
    return fields


def _set(fields, name, row, column, value):
    fields[name] = fields[name].copy()
    fields[name][row, column] = value


@pytest.mark.parametrize("change, message", [
    (lambda f: _set(f, "p", 2, 1, -0.5), "field 'p' row 2: entry 1 is -0.5"),
    (lambda f: _set(f, "q", 1, 0, np.nan), "field 'q' row 1: entry 0 is nan"),
    (lambda f: _set(f, "q_weak", 3, 0, 0.9), "field 'q_weak' row 3: sums to"),
    (lambda f: _set(f, "token_ids", 1, 2, f["token_ids"][1, 1]), "field 'token_ids' row 1: id .* more than once"),
    (lambda f: _set(f, "token_ids", 0, 0, 25), r"field 'token_ids' row 0: id 25 is outside the vocabulary \[0, 20\)"),
    (lambda f: f.pop("q"), "field 'q': missing"),
    (lambda f: f.pop("q_tail"), "field 'q_tail': missing"),
    (lambda f: f.update(extra=np.zeros(3)), "field 'extra': not part of the format"),
    (lambda f: f.update(format=np.array("other/1")), "field 'format': expected"),
    (lambda f: f.update(p_tail=-f["p_tail"]), "field 'p_tail' row 0: tail mass"),
    (lambda f: f.pop("position"), "field 'position': chain and position come together"),
    (lambda f: f.update(position=np.array([0, 0, 0, 1])), r"\(chain 0, position 0\) appears more than once"),
    (lambda f: f.update(depth=np.array([0, -1, 0, 0])), "field 'depth' row 1: depth -1"),
    (lambda f: f.update(model=np.array(3)), "field 'model': expected one string"),
    (lambda f: f.update(temperature=np.array(-1.0)), "field 'temperature': expected one positive number"),
    (lambda f: f.update(q=f["q"][:, :3]), "field 'q': shape"),
    (lambda f: f.update(vocab_size=np.array(3)), "field 'vocab_size': 3 is smaller"),
    (lambda f: f.update(p=f["p"].astype(np.int64)), "field 'p': expected floating-point"),
])
def test_errors_name_the_field_and_row(change, message):
    with pytest.raises(ValueError, match=message):
        logged_pairs(origin="test.npz", **broken(change))


def test_dense_logs_reject_tails_and_files_that_are_not_npz(tmp_path):
    p = np.full((2, 4), 0.25)
    with pytest.raises(ValueError, match="field 'p_tail': not part of the format .*sparse"):
        logged_pairs(format=np.array(FORMAT), p=p, q=p, p_tail=np.zeros(2))
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="junk.npz: not a readable"):
        read_logged(tmp_path / "junk.npz")


def test_a_log_is_written_exactly_where_asked(tmp_path):
    p = np.full((2, 4), 0.25)
    write_logged(tmp_path / "x.log", logged_pairs(format=np.array(FORMAT), p=p, q=p))
    assert [path.name for path in tmp_path.iterdir()] == ["x.log"]
    assert read_logged(tmp_path / "x.log").vocab_size == 4


def test_shrink_moves_dropped_mass_into_the_tails():
    pairs = logged_pairs(**sparse_fields())
    small = shrink(pairs, 3, 2)
    assert small.token_ids.shape == (3, 2) and len(small) == 3
    for name, (values, tail) in small.drafts.items():
        assert np.allclose(values.sum(1) + tail, 1.0, atol=1e-6), name
    assert np.allclose(small.p.sum(1) + small.p_tail, 1.0, atol=1e-6)
    assert (np.diff(small.token_ids, axis=1) > 0).all()
    assert "shrunk to the first 3 rows and 2 ids" in small.metadata["note"]


def test_shipped_sample_is_small_and_valid():
    assert SAMPLE_PATH.stat().st_size < 400_000
    sample = read_logged(SAMPLE_PATH)
    assert len(sample) == 40 and sample.token_ids.shape == (40, 512) and list(sample.drafts) == ["q", "q_weak"]


@pytest.mark.skipif(not SHARED.exists(), reason="the shared SmolLM2 file is not on this machine")
def test_shared_smollm2_file_is_read_and_the_sample_derives_from_it():
    shared = read_logged(SHARED)
    assert len(shared) == 96 and shared.vocab_size == 49152 and shared.metadata["model"] == "SmolLM2-135M-Instruct"
    assert min(tail.min() for _, tail in shared.drafts.values()) >= 0  # rounding-negative tails clipped
    expected = shrink(shared, 40, 512)
    sample = read_logged(SAMPLE_PATH)
    assert np.array_equal(sample.token_ids, expected.token_ids) and np.array_equal(sample.p, expected.p)


def with_decisions(fields: dict) -> dict:
    ids = fields["token_ids"]
    candidates = np.stack([ids[:, 0], ids[:, 1], np.full(ids.shape[0], -1)], axis=1)
    return {**fields, "candidates": candidates, "emitted": ids[:, 1].copy(),
            "accepted_index": np.ones(ids.shape[0], dtype=np.int64)}


def test_decision_fields_round_trip(tmp_path):
    fields = with_decisions(sparse_fields())
    write_logged(tmp_path / "decisions.npz", logged_pairs(**fields))
    back = read_logged(tmp_path / "decisions.npz")
    for name in ("candidates", "emitted", "accepted_index"):
        assert np.array_equal(back.decisions[name], fields[name])


@pytest.mark.parametrize("change, message", [
    (lambda f: f.pop("emitted"), "field 'emitted': candidates, emitted, accepted_index come together"),
    (lambda f: f.update(accepted_index=np.full(4, 2)), "field 'accepted_index' row 0: must be -1 or the position"),
    (lambda f: f.update(emitted=f["token_ids"][:, 2].copy()), "field 'accepted_index' row 0"),
    (lambda f: _set(f, "candidates", 0, 0, -1), "field 'candidates' row 0: ids must lie in the vocabulary"),
    (lambda f: f.update(accepted_index=np.full(4, -1),
                        emitted=np.full(4, np.setdiff1d(np.arange(20), f["token_ids"][0])[0])),
     "field 'candidates' row 0: every candidate"),
])
def test_decision_fields_are_validated(change, message):
    fields = with_decisions(sparse_fields())
    change(fields)
    with pytest.raises(ValueError, match=message):
        logged_pairs(origin="test.npz", **fields)
