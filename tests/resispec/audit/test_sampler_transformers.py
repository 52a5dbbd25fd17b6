"""transformers' installed ``_speculative_sampling``, audited as shipped through a 10-line adapter
(tests/resispec/audit/hf_samplers.py): the exact mode passes at node and chain level, the
``assistant_ensemble_weight`` mode (w = 0.5) is rejected (its law, and the tokens with p = 0 it accepts), and
the edge probe forces u = 0: up to 5.24 ``r_i <= probability_ratio`` accepts a draft token with p = 0 there
(the probe must find it); from 5.25 the comparison is ``r_i < probability_ratio`` (the probe must find none).
Either way the probe's verdict is checked against the installed release, so the test fails if it breaks."""

import pytest
from packaging.version import Version

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
U_0_FIXED_IN = Version("5.25.0")
"""The first transformers release whose ``_speculative_sampling`` compares with a strict ``<``."""


def accepts_p_0_at_u_0() -> bool:
    """Whether the installed transformers has the ``<=`` comparison (module docstring)."""
    import transformers

    return Version(transformers.__version__).release < U_0_FIXED_IN.release


NODE = dict(k=1, samples=1500, pairs=["dirichlet-1", "zeros-in-p", "zeros-in-q", "disjoint", "llm-like",
                                      "counterexample"])


def test_the_exact_mode_passes_every_test_at_node_level_and_the_edge_probe_judges_u_0_as_installed():
    report = audit_sampler(hf_node, "node", probe_edges=True, **NODE, **HF)
    assert not report.rejected_tests and report.output.clean
    edges = {edge.edge: edge for edge in report.edges}
    assert edges["0"].forced["rand_like"] >= 1
    assert (edges["0"].contract.counts["token with p = 0"] >= 1) is accepts_p_0_at_u_0()
    assert edges["1 - 2^-24"].contract.clean and edges["smallest positive float32"].contract.clean
    assert report.verdict == ("FAIL" if accepts_p_0_at_u_0() else "PASS")


def test_the_exact_mode_passes_at_chain_level():
    report = audit_sampler(hf_chain, "chain", gamma=4, samples=2000, **HF)
    assert report.verdict == "PASS", report.format()
    assert report.coverage["depth reached"] == 4


def test_a_chain_is_a_tree_of_one_path():
    report = audit_sampler(hf_tree, "tree", branching=(1, 1, 1), samples=1500, **HF)
    assert report.verdict == "PASS", report.format()


def test_the_chain_edge_probe_pins_the_accepted_token_with_p_0_where_the_release_has_it():
    report = audit_sampler(hf_chain, "chain", gamma=4, samples=200, families=["dirichlet"], probe_edges=True, **HF)
    edges = {edge.edge: edge for edge in report.edges}
    assert edges["0"].forced["rand_like"] >= 1
    if accepts_p_0_at_u_0():
        assert edges["0"].contract.counts["token with p = 0"] == 1
        assert "edge u = 0" in edges["0"].contract.examples["token with p = 0"]
    else:
        assert edges["0"].contract.clean


@pytest.mark.parametrize("sampler, level", [(hf_ensemble_node, "node"), (hf_ensemble_chain, "chain")])
def test_the_ensemble_mode_is_rejected(sampler, level):
    options = NODE if level == "node" else dict(gamma=4, samples=1500)
    report = audit_sampler(sampler, level, **options, **HF)
    assert report.verdict == "FAIL"
    assert any(test.dimension == "law" for test in report.rejected_tests)
    # v(x) = w p(x) + (1 - w) q(x) > 0 where p = 0: half the drafts the target forbids are accepted
    assert report.output.counts["token with p = 0"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("level", ["node", "chain"])
def test_the_exact_mode_passes_at_the_default_samples(level):
    report = audit_sampler(hf_node if level == "node" else hf_chain, level, k=1, gamma=4, **HF)
    assert report.verdict == "PASS", report.format()


def test_the_docs_first_worked_example_shows_what_the_installed_release_does():
    """docs/audit_sampler.md's first worked example (the node audit with the edge probe) shows the verdict the
    installed transformers gets (issue 46: it showed 5.24's FAIL where the installed 5.25 passes)."""
    import transformers

    from tests.readme import ROOT, doc_section

    heading = "## Worked examples: transformers' `_speculative_sampling` (installed 5.25.0; 5.24 where it differs)"
    section = doc_section(ROOT / "docs" / "audit_sampler.md", heading)
    assert f"installed {transformers.__version__}" in section
    first = section.split("```\n")[2]  # after the adapters' ```python block: the first command and its output
    assert first.startswith("$ resispec audit-sampler tests/resispec/audit/hf_samplers.py:hf_node")
    assert f"verdict: {'FAIL' if accepts_p_0_at_u_0() else 'PASS'} " in first
