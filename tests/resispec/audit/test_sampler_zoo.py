"""The zoo through the callable contract: every exact verifier passes at node and chain level, every control is
rejected at a level where it is biased, and a control reduced to an exact rule on a chain passes there."""

import pytest

from resispec.audit.sampler import audit_sampler, zoo_sampler
from resispec.verifiers import VERIFIERS, get_verifier

EXACT = [name for name, cls in VERIFIERS.items() if cls.claims_exact]
CONTROLS = [name for name, cls in VERIFIERS.items() if not cls.claims_exact]
NODE_PAIRS = ["dirichlet-1", "zeros-in-p", "zeros-in-q", "disjoint", "llm-like", "counterexample"]


def node_audit(name: str, **options):
    verifier = get_verifier(name)
    k = min(2, verifier.max_k or 2)
    options.setdefault("samples", 1500)
    options.setdefault("pairs", NODE_PAIRS)
    return audit_sampler(zoo_sampler(name), "node", k=k, drafting=verifier.drafting, rule=name, **options)


@pytest.mark.parametrize("name", EXACT)
def test_every_exact_verifier_passes_at_node_level(name):
    report = node_audit(name)
    assert report.verdict == "PASS", report.format()
    assert any(test.dimension == "acceptance" and test.tested for test in report.tests)


@pytest.mark.parametrize("name", EXACT)
def test_every_exact_verifier_passes_at_chain_level(name):
    drafting = get_verifier(name).drafting
    report = audit_sampler(zoo_sampler(name, "chain"), "chain", gamma=2, drafting=drafting, rule=name, samples=700,
                           families=["suite"])
    assert report.verdict == "PASS", report.format()


@pytest.mark.parametrize("name", CONTROLS)
def test_every_control_is_rejected_at_node_level(name):
    k = 4 if name == "ears" else 2
    verifier = get_verifier(name)
    report = audit_sampler(zoo_sampler(name), "node", k=k, drafting=verifier.drafting, samples=2000)
    assert report.verdict == "FAIL", report.format()
    assert report.output.clean and any(test.dimension == "law" for test in report.rejected_tests)


def test_rrs_as_a_chain_passes_and_the_published_rule_as_a_chain_is_rejected():
    passed = audit_sampler(zoo_sampler("rrs", "chain"), "chain", gamma=4, rule="rrs", samples=1000)
    assert passed.verdict == "PASS"
    assert passed.coverage["depth reached"] == 4 and passed.coverage["rounds fully accepted (bonus token emitted)"] > 0
    rejected = audit_sampler(zoo_sampler("resispec_paper", "chain"), "chain", gamma=4, samples=1000)
    assert rejected.verdict == "FAIL"


@pytest.mark.parametrize("name, drafting", [("rrs_skip_dup", "iid"), ("wor_unmasked", "wor")])
def test_one_candidate_per_position_reduces_a_control_to_an_exact_rule_which_a_tree_catches(name, drafting):
    chain = audit_sampler(zoo_sampler(name, "chain"), "chain", gamma=2, drafting=drafting, samples=1500)
    assert chain.verdict == "PASS"
    tree = audit_sampler(zoo_sampler(name, "tree", (3,)), "tree", branching=(3,), drafting=drafting, samples=2000,
                         families=["suite"])
    assert tree.verdict == "FAIL", tree.format()


@pytest.mark.parametrize("name, drafting", [("rrs", "iid"), ("traversal", "iid"), ("rrs_wor", "wor")])
def test_exact_tree_verifiers_pass_at_tree_level(name, drafting):
    # branching 2,1: two paths, and the rule's depth law enumerates 1,296 trees (2,2 would take 46,656)
    report = audit_sampler(zoo_sampler(name, "tree", (2, 1)), "tree", branching=(2, 1), drafting=drafting, rule=name,
                           samples=800, families=["dirichlet", "ties"])
    assert report.verdict == "PASS", report.format()
    assert any(test.name == "accepted depth" and test.tested for test in report.tests)


def test_unequal_chain_lengths_share_calls_and_each_length_is_tested():
    report = audit_sampler(zoo_sampler("rrs", "chain"), "chain", gamma=3, rule="rrs", extras=["lengths"], samples=1200,
                           families=["dirichlet"])
    assert report.verdict == "PASS", report.format()
    depth_tests = [test.context for test in report.tests if test.name == "accepted depth"]
    assert depth_tests == [f"dirichlet, length {g}" for g in (1, 2, 3)]
