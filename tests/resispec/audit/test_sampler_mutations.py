"""Deliberately buggy samplers (tests/resispec/audit/toy_samplers.py) are rejected exactly where their bug lives,
and their correct versions pass there: the audit's dimensions (chain level at T != 1, batch composition, edge
probes, the output contract) each catch what nothing else sees."""

from functools import partial

import numpy as np
import pytest

from resispec.audit.sampler import audit_sampler
from resispec.processing import Processing
from tests.resispec.audit import module_rng_samplers as module_rng
from tests.resispec.audit import toy_samplers as toy

pytest.importorskip("torch")
pytestmark = pytest.mark.usefixtures("one_torch_thread")

COOL = Processing(temperature=0.5)


def rejected(report) -> set[str]:
    return {test.name for test in report.rejected_tests}


def test_a_bonus_token_drawn_without_the_temperature_is_caught_only_by_the_chain_at_t_not_1():
    buggy = partial(toy.sps_chain, processing=COOL, forget_bonus=True)
    chain = audit_sampler(buggy, "chain", gamma=1, temperature=0.5, samples=1500, families=["dirichlet"])
    assert chain.verdict == "FAIL" and chain.output.clean
    assert "sequence law (cells)" in rejected(chain)
    node = audit_sampler(partial(toy.sps_node, processing=COOL, forget_bonus=True), "node", k=1,
                         temperature=0.5, samples=1500, pairs=["dirichlet-1", "llm-like", "counterexample"])
    assert node.verdict == "PASS"
    at_one = audit_sampler(partial(toy.sps_chain, forget_bonus=True), "chain", gamma=1, samples=1500,
                           families=["dirichlet"])
    assert at_one.verdict == "PASS"
    correct = audit_sampler(partial(toy.sps_chain, processing=COOL), "chain", gamma=1, temperature=0.5, samples=1500,
                            families=["dirichlet"])
    assert correct.verdict == "PASS"


def test_a_residual_without_top_k_breaks_the_output_contract():
    processing = Processing(top_k=2)
    buggy = partial(toy.sps_node, processing=processing, forget_top_k_residual=True)
    report = audit_sampler(buggy, "node", k=1, top_k=2, samples=400, pairs=["dirichlet-1", "dirichlet-3"])
    assert report.verdict == "FAIL" and report.output.counts["token with p = 0"] > 0
    fixed = audit_sampler(partial(toy.sps_node, processing=processing), "node", k=1, top_k=2, samples=400,
                          pairs=["dirichlet-1", "dirichlet-3"])
    assert fixed.verdict == "PASS"


MIXED = dict(arrays="torch", k=1, samples=1500, pairs=["dirichlet-1", "llm-like", "zeros-in-p"], rule="sps")


def test_the_mixed_batch_bug_is_caught_by_batch_composition_and_only_there():
    buggy = partial(toy.race_node, mixed_batch_bug=True)
    report = audit_sampler(buggy, "node", extras=["generators"], **MIXED)
    assert report.verdict == "FAIL"
    groups = {test.context for test in report.rejected_tests if test.dimension == "batch"}
    assert "unseeded rows of mixed batches" in groups
    assert not {"seeded rows of mixed batches", "rows of all-seeded batches", "rows of all-unseeded batches"} & groups
    unseeded_only = audit_sampler(buggy, "node", **MIXED)
    assert unseeded_only.verdict == "PASS"
    fixed = audit_sampler(toy.race_node, "node", extras=["generators"], **MIXED)
    assert fixed.verdict == "PASS"


def test_the_numpy_edge_probe_finds_an_acceptance_at_u_equal_to_zero():
    buggy = partial(toy.rng_node, accept_at_equality=True)
    report = audit_sampler(buggy, "node", k=1, extras=["rng"], samples=300, pairs=["zeros-in-p"], probe_edges=True)
    edges = {edge.edge: edge for edge in report.edges}
    assert report.verdict == "FAIL"
    assert edges["0"].reached and edges["0"].contract.counts["token with p = 0"] > 0
    assert edges["1 - 2^-24"].contract.clean
    fixed = audit_sampler(toy.rng_node, "node", k=1, extras=["rng"], samples=300, pairs=["zeros-in-p"],
                          probe_edges=True)
    assert fixed.verdict == "PASS" and all(edge.reached and edge.contract.clean for edge in fixed.edges)


@pytest.mark.parametrize("sampler", [module_rng.module_rng_node, module_rng.default_rng_node,
                                     partial(toy.rng_node, rng=np.random.default_rng(6))])
def test_the_edge_probe_reaches_generators_made_before_the_call(sampler):
    """A module-level generator (the most common NumPy style), a default argument, a partial's bound argument."""
    buggy = partial(sampler, accept_at_equality=True)
    report = audit_sampler(buggy, "node", k=1, samples=300, pairs=["zeros-in-p"], probe_edges=True)
    edges = {edge.edge: edge for edge in report.edges}
    assert report.verdict == "FAIL" and report.edges_tested
    assert edges["0"].forced["Generator.random"] >= 1 and edges["0"].contract.counts["token with p = 0"] > 0
    assert isinstance(module_rng.RNG, np.random.Generator)  # put back after the probe
    fixed = audit_sampler(sampler, "node", k=1, samples=300, pairs=["zeros-in-p"], probe_edges=True)
    assert fixed.verdict == "PASS" and all(edge.reached and edge.contract.clean for edge in fixed.edges)


def test_an_edge_probe_that_reaches_nothing_says_not_reachable_and_the_verdict_says_edges_not_tested():
    report = audit_sampler(module_rng.ObjectRngNode(accept_at_equality=True), "node", k=1, samples=200,
                           pairs=["zeros-in-p"], probe_edges=True)
    assert report.edges and not any(edge.reached for edge in report.edges) and report.edges_tested is False
    text = report.format()
    assert "not reachable" in text and "clean" not in text
    assert text.rstrip().endswith("verdict: PASS, edges UNTESTED (not reachable)")
    assert report.to_dict()["edges_tested"] is False


def test_each_edge_states_how_likely_its_value_is_in_the_samplers_dtype():
    report = audit_sampler(toy.rng_node, "node", k=1, extras=["rng"], samples=100, pairs=["zeros-in-p"],
                           probe_edges=True)
    likelihood = {edge.edge: edge.likelihood for edge in report.edges}
    assert likelihood["0"] == "1 in 2^53 float64 draws" and "2^53" in likelihood["1 - 2^-24"]
    assert "never on the float64 grid" in likelihood["smallest positive float32"]


TIES = dict(k=1, samples=3000, dtype="float32", pairs=["ties", "float32-ties", "dirichlet-1", "llm-like"])


def test_a_sampler_that_collapses_tied_tokens_onto_the_smallest_id_is_caught_by_the_tie_pairs_only():
    buggy = audit_sampler(partial(toy.rank_node, collapse_ties=True), "node", **TIES)
    assert buggy.verdict == "FAIL" and buggy.output.clean
    assert {test.context for test in buggy.rejected_tests if test.name == "token law"} == {"ties", "float32-ties"}
    fixed = audit_sampler(toy.rank_node, "node", **TIES)
    assert fixed.verdict == "PASS", fixed.format()
    default = audit_sampler(toy.rank_node, "node", k=1, samples=50)
    assert {"ties", "float32-ties"} <= {test.context for test in default.tests}  # audited by default


def test_a_chain_sampler_that_collapses_tied_tokens_is_caught_at_the_tied_root_of_the_default_families():
    """rank_node's chain twin: the dirichlet family's root (CHAIN_TIES) has a residual tied at ids 0 and 1."""
    buggy = audit_sampler(partial(toy.sps_chain, by_rank=True, collapse_ties=True), "chain", gamma=2, samples=1500)
    assert buggy.verdict == "FAIL" and buggy.output.clean
    assert ("first token", "dirichlet") in {(test.name, test.context) for test in buggy.rejected_tests}
    assert not {test.context for test in buggy.rejected_tests} - {"dirichlet"}
    fixed = audit_sampler(partial(toy.sps_chain, by_rank=True), "chain", gamma=2, samples=1500)
    assert fixed.verdict == "PASS", fixed.format()


def test_a_tree_verifier_that_collapses_tied_tokens_is_caught_by_the_tied_families_only():
    """rank_node's tree twin: the default tree families add ``ties`` (its root tied in float32 only, its deeper nodes
    exactly) to the tied root of ``dirichlet``; ``suite`` holds no ties and passes."""
    tree = dict(level="tree", extras=["branching"], samples=3000)
    buggy = audit_sampler(partial(toy.rrs_tree, collapse_ties=True), dtype="float32", **tree)
    assert buggy.verdict == "FAIL" and buggy.output.clean
    law = {(test.name, test.context) for test in buggy.rejected_tests if test.dimension == "law"}
    assert ("first token", "ties") in law and {context for _, context in law} <= {"dirichlet", "ties"}
    assert {"suite", "dirichlet", "ties"} == {test.context for test in buggy.tests if test.dimension == "law"}
    float64 = audit_sampler(partial(toy.rrs_tree, collapse_ties=True), families=["ties"], **tree)
    law = {test.name for test in float64.rejected_tests if test.dimension == "law"}
    assert float64.verdict == "FAIL" and "first token" not in law and "first 2 tokens" in law  # exact ties below
    fixed = audit_sampler(toy.rrs_tree, dtype="float32", **tree)
    assert fixed.verdict == "PASS", fixed.format()
