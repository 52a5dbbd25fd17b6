"""transformers' installed ``_speculative_sampling`` (5.24), audited as shipped through a 10-line adapter
(tests/resispec/audit/hf_samplers.py): the exact mode passes at node and chain level, the
``assistant_ensemble_weight`` mode (w = 0.5) is rejected (its law, and the tokens with p = 0 it accepts), and
the edge probe finds that at u = 0 its ``r_i <= probability_ratio`` accepts a draft token with p = 0."""

import pytest

from resispec.audit.sampler import audit_sampler

pytest.importorskip("torch")
pytestmark = pytest.mark.usefixtures("one_torch_thread")
pytest.importorskip("transformers")

from tests.resispec.audit.hf_samplers import (  # noqa: E402
    hf_chain,
    hf_ensemble_chain,
    hf_ensemble_node,
    hf_node,
    hf_tree,
)

HF = dict(arrays="torch", dtype="float32", inputs="logits", rule="sps")
NODE = dict(k=1, samples=1500, pairs=["dirichlet-1", "zeros-in-p", "zeros-in-q", "disjoint", "llm-like",
                                      "counterexample"])


def test_the_exact_mode_passes_every_test_at_node_level_and_the_edge_probe_finds_the_u_0_acceptance():
    report = audit_sampler(hf_node, "node", probe_edges=True, **NODE, **HF)
    assert not report.rejected_tests and report.output.clean
    edges = {edge.edge: edge for edge in report.edges}
    assert edges["0"].forced["rand_like"] >= 1
    assert edges["0"].contract.counts["token with p = 0"] >= 1
    assert edges["1 - 2^-24"].contract.clean and edges["smallest positive float32"].contract.clean
    assert report.verdict == "REJECTED"


def test_the_exact_mode_passes_at_chain_level():
    report = audit_sampler(hf_chain, "chain", gamma=4, samples=2000, **HF)
    assert report.verdict == "PASS", report.format()
    assert report.coverage["depth reached"] == 4


def test_a_chain_is_a_tree_of_one_path():
    report = audit_sampler(hf_tree, "tree", branching=(1, 1, 1), samples=1500, **HF)
    assert report.verdict == "PASS", report.format()


def test_the_chain_edge_probe_pins_the_accepted_token_with_p_0():
    report = audit_sampler(hf_chain, "chain", gamma=4, samples=200, families=["dirichlet"], probe_edges=True, **HF)
    edges = {edge.edge: edge for edge in report.edges}
    assert edges["0"].contract.counts["token with p = 0"] == 1
    assert "edge u = 0" in edges["0"].contract.examples["token with p = 0"]


@pytest.mark.parametrize("sampler, level", [(hf_ensemble_node, "node"), (hf_ensemble_chain, "chain")])
def test_the_ensemble_mode_is_rejected(sampler, level):
    options = NODE if level == "node" else dict(gamma=4, samples=1500)
    report = audit_sampler(sampler, level, **options, **HF)
    assert report.verdict == "REJECTED"
    assert any(test.dimension == "law" for test in report.rejected_tests)
    # v(x) = w p(x) + (1 - w) q(x) > 0 where p = 0: half the drafts the target forbids are accepted
    assert report.output.counts["token with p = 0"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("level", ["node", "chain"])
def test_the_exact_mode_passes_at_the_default_samples(level):
    report = audit_sampler(hf_node if level == "node" else hf_chain, level, k=1, gamma=4, **HF)
    assert report.verdict == "PASS", report.format()
