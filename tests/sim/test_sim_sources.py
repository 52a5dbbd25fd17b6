"""Pair sources: seeded, valid distributions, each family's defining property, and spec parsing."""

from __future__ import annotations

import numpy as np
import pytest

from resispec.sim.sources import FAMILIES, SYNTHETIC_CHAIN, LoggedSource, parse_source, readable_spec, truncate_rows

SPECS = ["dirichlet:alpha=0.5,V=40", "zipf:V=40,head=8,mode=permute", "zipf:V=40,mode=perturb,sigma=1",
         "temperature:tau=0.5,V=40", "llm:sigma=2,V=40", "llm:V=40,top_k=5", "temperature:V=40,top_p=0.8",
         "dirichlet:V=40,top_k=3,top_p=0.5"]


@pytest.mark.parametrize("spec", SPECS)
def test_sources_are_seeded_valid_distributions(spec):
    source = parse_source(spec)
    batch = source.sample(50, np.random.default_rng(1))
    again = source.sample(50, np.random.default_rng(1))
    other = source.sample(50, np.random.default_rng(2))
    assert batch.p.shape == batch.q.shape == (50, 40)
    for rows in (batch.p, batch.q):
        assert (rows >= 0).all() and np.allclose(rows.sum(axis=1), 1.0, atol=1e-12)
    assert np.array_equal(batch.p, again.p) and np.array_equal(batch.q, again.q)
    assert not np.array_equal(batch.p, other.p)
    assert np.array_equal(batch.chain, np.arange(50) // SYNTHETIC_CHAIN)
    assert np.array_equal(batch.position, np.arange(50) % SYNTHETIC_CHAIN)
    assert parse_source(source.spec) == source


def test_each_family_has_its_defining_property():
    rng = np.random.default_rng(3)
    temperature = parse_source("temperature:tau=0.5,V=30").sample(10, rng)
    ratio = np.log(temperature.q) - np.log(temperature.p) / 0.5  # q ∝ p^(1/tau): constant per row
    assert np.allclose(ratio - ratio[:, :1], 0.0, atol=1e-9)
    zipf = parse_source("zipf:s=1.5,V=30,head=6,mode=permute").sample(10, rng)
    ranked = np.sort(zipf.p, axis=1)[:, ::-1]
    weights = np.arange(1, 31) ** -1.5
    assert np.allclose(ranked, weights / weights.sum())
    head = np.argsort(-zipf.p, axis=1)[:, :6]
    assert np.allclose(np.sort(np.take_along_axis(zipf.q, head, 1), 1), np.sort(np.take_along_axis(zipf.p, head, 1), 1))
    outside = np.ones(zipf.p.shape, dtype=bool)
    np.put_along_axis(outside, head, False, axis=1)
    assert np.allclose(zipf.q[outside], zipf.p[outside], rtol=1e-12) and not np.allclose(zipf.q, zipf.p)
    perturbed = parse_source("zipf:V=30,head=6,mode=perturb").sample(10, rng)
    scale = perturbed.q / perturbed.p  # the tail keeps its shape (one renormalisation factor per row)
    head = np.argsort(-perturbed.p, axis=1)[:, :6]
    tail = np.ones(scale.shape, dtype=bool)
    np.put_along_axis(tail, head, False, axis=1)
    tail_scale = scale[tail].reshape(10, 24)
    assert np.allclose(tail_scale, tail_scale[:, :1], rtol=1e-12)
    assert not np.allclose(np.take_along_axis(scale, head, 1), tail_scale[:, :1])
    llm = parse_source("llm:sigma=0,V=30").sample(5, rng)
    assert np.allclose(llm.p, llm.q)
    mixed = parse_source("dirichlet:V=30,mix=1").sample(5, rng)
    assert np.allclose(mixed.p, mixed.q)


def test_truncation_keeps_each_rows_own_top_set():
    rows = np.array([[0.1, 0.4, 0.2, 0.3], [0.25, 0.25, 0.25, 0.25]])
    top_two = truncate_rows(rows, 2, None)
    assert np.allclose(top_two, [[0, 4 / 7, 0, 3 / 7], [0.5, 0.5, 0, 0]])  # ties by token id
    nucleus = truncate_rows(rows, None, 0.6)
    assert np.allclose(nucleus, [[0, 4 / 7, 0, 3 / 7], [1 / 3, 1 / 3, 1 / 3, 0]])
    assert truncate_rows(rows, None, None) is rows
    batch = parse_source("llm:V=50,top_p=0.9,top_k=7").sample(20, np.random.default_rng(0))
    assert (np.count_nonzero(batch.p, axis=1) <= 7).all() and (np.count_nonzero(batch.q, axis=1) <= 7).all()


def test_logged_sample_source():
    batch = parse_source("logged:sample").sample(1000, np.random.default_rng(0))
    assert batch.p.shape == (40, 513) and batch.source == "logged:sample"
    assert np.array_equal(batch.position, np.arange(40)) and (batch.chain == 0).all()
    weak = parse_source("logged:sample,draft=q_weak").sample(10, np.random.default_rng(0))
    assert len(weak) == 10 and not np.allclose(weak.q, batch.q[:10])
    assert parse_source("logged:sample,draft=q_weak") == LoggedSource("sample", "q_weak")


@pytest.mark.parametrize("spec, message", [
    ("gauss:V=3", "unknown family"), ("llm:V", "bad parameter"), ("llm:width=3", "bad parameter"),
    ("llm:V=abc", "expects int"), ("dirichlet:alpha=0", "alpha"), ("llm:V=1", "V"), ("zipf:mode=swap", "mode"),
    ("zipf:V=8,head=9", "head"), ("llm:top_p=1.5", "top_p"), ("llm:top_k=0", "top_k"), ("temperature:tau=0", "tau"),
    ("logged:", "logged:FILE"), ("logged:draft=q", "logged:FILE"),
])
def test_bad_specs_name_the_problem(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_source(spec)


def test_every_family_is_registered():
    assert set(FAMILIES) == {"dirichlet", "zipf", "temperature", "llm"}


def test_figures_name_a_logged_file_by_its_repository_path_or_its_file_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    inside = tmp_path / "data" / "rows.npz"
    assert readable_spec(f"logged:{inside},draft=q_weak") == "logged:data/rows.npz,draft=q_weak"
    assert readable_spec("logged:data/rows.npz,tail=split") == "logged:data/rows.npz,tail=split"
    assert readable_spec("logged:/elsewhere/on/a/machine/rows.npz") == "logged:rows.npz"
    for unchanged in ("logged:sample", "logged:sample,draft=q_weak", "llm:V=1000,scale=3,sigma=1"):
        assert readable_spec(unchanged) == unchanged
