"""Engine-owned drafting (``drafting="engine"``): the two coupled-randomness bug classes of 2026, written anew in
tests/resispec/audit/engine_samplers.py, are rejected by the law tests and only there, at node, chain and tree level;
their independent twin passes; drafts outside q's support (a tree: paths that are not one tree, siblings the declared
scheme cannot draw) break the contract; the options that cannot go together are one-line errors."""

from functools import partial

import numpy as np
import pytest

from resispec.audit.sampler import SamplerError, audit_sampler
from resispec.audit.sampler.engine_drafting import DRAFT_VIOLATION, TREE_VIOLATION, RequestPool
from tests.resispec.audit import engine_samplers as engine

NODE = dict(k=1, drafting="engine", extras=["seeds", "positions"], rule="sps", samples=4000,
            pairs=["dirichlet-1", "zeros-in-q", "p-equals-q"])
CHAIN = dict(gamma=3, drafting="engine", extras=["seeds", "positions"], rule="sps", samples=3000, families=["suite"])
TREE = dict(level="tree", drafting="engine", extras=["seeds", "positions"], families=["suite"])


def dimensions(report) -> set[str]:
    return {test.dimension for test in report.rejected_tests}


@pytest.mark.parametrize("coupling", ["gumbel", "uniform"])
def test_coupled_draft_and_recovery_noise_is_rejected_by_the_law_tests_at_a_node(coupling):
    report = audit_sampler(partial(engine.engine_node, coupling=coupling), "node", **NODE)
    assert report.verdict == "FAIL" and report.output.clean
    assert "law" in dimensions(report) and "drafts" not in dimensions(report)
    assert {test.context for test in report.rejected_tests if test.name == "token law"} >= {"zeros-in-q"}


@pytest.mark.parametrize("coupling", ["gumbel", "uniform"])
def test_coupled_draft_and_recovery_noise_is_rejected_along_a_chain(coupling):
    report = audit_sampler(partial(engine.engine_chain, coupling=coupling), "chain", **CHAIN)
    assert report.verdict == "FAIL" and report.output.clean
    assert "first token" in {test.name for test in report.rejected_tests}
    assert "drafts" not in dimensions(report)


def test_the_independent_twin_passes_at_a_node_and_along_a_chain():
    node = audit_sampler(engine.engine_node, "node", **NODE)
    assert node.verdict == "PASS", node.format()
    assert {"first round of a request", "later rounds of a request"} <= {test.context for test in node.tests}
    chain = audit_sampler(engine.engine_chain, "chain", **CHAIN)
    assert chain.verdict == "PASS", chain.format()
    assert {"first draft", "draft law (by prefix)"} <= {test.name for test in chain.tests}


def test_noise_keyed_by_the_seed_alone_repeats_and_is_rejected_with_the_drafts_named():
    report = audit_sampler(partial(engine.engine_chain, coupling="seed only"), "chain", **CHAIN)
    assert report.verdict == "FAIL"
    assert "draft law (by prefix)" in {test.name for test in report.rejected_tests}


def test_drafts_outside_the_drafts_support_break_the_contract():
    def argmin_draft(p, q, k):
        candidates = np.argmin(q, axis=1)[:, None]  # a token with q = 0 where q has zeros
        return np.argmax(p, axis=1), candidates

    report = audit_sampler(argmin_draft, "node", k=1, drafting="engine", samples=200, pairs=["zeros-in-q"])
    assert report.output.counts[DRAFT_VIOLATION] == 200 and report.verdict == "FAIL"


def test_a_request_pool_reuses_seeds_at_advancing_positions():
    pool = RequestPool(np.random.default_rng(0), step=5, size=4)
    first = pool.assign([1, None, 1, 1])
    second = pool.assign([1, 1, 1, 1])
    assert first[0][1] is None and first[2][1] == -1 and sorted(first[2][[0, 2, 3]]) == [0, 0, 0]
    assert sorted(second[2].tolist()) == [0, 1, 1, 1] and set(second[0]) == set(pool.seeds.tolist())
    assert sorted(second[1].tolist()) == [0, 5, 5, 5]


@pytest.mark.parametrize("options, message", [
    (dict(level="chain", drafting="engine-wor"), "applies to level='tree'"),
    (dict(level="tree", drafting="engine", q_layout="parent"), "asks for q rows itself"),
    (dict(extras=["positions"]), "needs drafting='engine'"),
    (dict(level="chain", drafting="engine", extras=["lengths"]), "every chain has gamma drafts"),
    (dict(drafting="engine", rule="rrs_wor"), "drafts by wor"),
])
def test_options_engine_drafting_cannot_take_are_one_line_errors(options, message):
    with pytest.raises(ValueError, match=message):
        audit_sampler(engine.engine_node, **{"level": "node", **options, "samples": 10})


def test_a_sampler_that_returns_one_array_under_engine_drafting_is_a_sampler_error():
    with pytest.raises(SamplerError, match="expected a tuple of 2 integer arrays"):
        audit_sampler(lambda p, q, k: engine.engine_node(p, q, k)[0], "node", k=1, drafting="engine", samples=10,
                      pairs=["dirichlet-1"])


def test_a_tree_drafted_with_the_recovery_noise_shared_is_rejected_by_the_law_tests_only():
    report = audit_sampler(partial(engine.engine_tree, coupling="gumbel"), **TREE)  # the default 6000 samples
    assert report.verdict == "FAIL" and report.output.clean
    assert ("first token", "suite") in {(test.name, test.context) for test in report.rejected_tests}
    assert "drafts" not in dimensions(report)


@pytest.mark.parametrize("siblings, drafting", [("iid", "engine"), ("wor", "engine-wor")])
def test_the_independent_tree_twin_passes_with_its_drafts_law_tested(siblings, drafting):
    report = audit_sampler(partial(engine.engine_tree, siblings=siblings), **{**TREE, "drafting": drafting},
                           samples=2000)
    assert report.verdict == "PASS", report.format()
    assert {f"root's 2 children ({siblings})", "first draft", "draft law (by prefix)"} <= {
        test.name for test in report.tests if test.dimension == "drafts"}
    assert {"first round of a request", "later rounds of a request"} <= {test.context for test in report.tests}


def test_tree_siblings_drawn_by_another_scheme_than_declared_are_named():
    wor_as_iid = audit_sampler(partial(engine.engine_tree, siblings="wor"), **TREE, samples=1500)
    assert {test.name for test in wor_as_iid.rejected_tests} == {"root's 2 children (iid)"}
    iid_as_wor = audit_sampler(engine.engine_tree, **{**TREE, "drafting": "engine-wor"}, samples=300)
    assert iid_as_wor.verdict == "FAIL" and iid_as_wor.output.counts[TREE_VIOLATION] > 0


def test_tree_paths_that_disagree_on_a_shared_node_break_the_contract():
    def split(target, draft, rows, branching):
        out, paths = engine.engine_tree(target, draft, rows, branching)
        paths[:, 1, 0] = (paths[:, 0, 0] + 1) % 6  # paths 0 and 1 share their depth-1 node
        return out, paths

    report = audit_sampler(split, "tree", drafting="engine", samples=50, families=["dirichlet"])
    assert report.output.counts[TREE_VIOLATION] == 50 and report.verdict == "FAIL"


@pytest.mark.parametrize("name, siblings", [("rrs", "iid"), ("rrs_wor", "wor"), ("traversal", "iid")])
def test_exact_zoo_tree_verifiers_wrapped_with_engine_drafting_pass(name, siblings):
    report = audit_sampler(engine.engine_zoo(name, (2, 1), siblings), "tree", branching=(2, 1), rule=name,
                           drafting="engine" if siblings == "iid" else "engine-wor", extras=["seeds", "positions"],
                           samples=800, families=["dirichlet", "ties"])
    assert report.verdict == "PASS", report.format()
    assert any(test.name == "accepted depth" and test.tested for test in report.tests)


def test_a_tree_sampler_returning_paths_of_the_wrong_shape_is_a_sampler_error():
    def flat(target, draft, rows, branching):
        out, paths = engine.engine_tree(target, draft, rows, branching)
        return out, paths[:, :, 0]

    with pytest.raises(SamplerError, match=r"returned shape \(\d+, 4\); expected \(\d+, 4, 2\)"):
        audit_sampler(flat, "tree", drafting="engine", samples=10, families=["suite"])
    with pytest.raises(SamplerError, match=r"target: expected token ids .* of shape \(\d+, 4, 2\)"):
        audit_sampler(lambda target, draft, rows, branching: (None, target(np.zeros((rows, 2), dtype=int))),
                      "tree", drafting="engine", samples=10, families=["suite"])
