"""The whole processed law as claims (``resispec.processing``): an exact sampler with every claim on passes with a
verdict per claim; samplers that skip one claim on the verified rows (tests/resispec/audit/toy_samplers.py,
``processed_chain``) are rejected with that claim named; claims the contract cannot serve are one-line errors."""

from dataclasses import replace
from functools import partial

import pytest

from resispec.audit.sampler import audit_sampler
from resispec.processing import Processing
from tests.resispec.audit import toy_samplers as toy

ALL = Processing(temperature=0.8, top_k=5, min_p=0.1, logit_bias=((2, 1.0),), repetition_penalty=1.3,
                 presence_penalty=0.3, frequency_penalty=0.4, banned=(4,), min_tokens=6, eos=5)
CHAIN = dict(gamma=4, processing=ALL, inputs="logits", extras=["history"], samples=1500)


def test_an_exact_sampler_with_every_claim_on_passes_with_a_verdict_per_claim():
    report = audit_sampler(partial(toy.processed_chain, processing=ALL), "chain", **CHAIN)
    assert report.verdict == "PASS", report.format()
    assert set(report.parameters) == set(ALL.claims()) - {"eos"}
    assert all(line.startswith(("consistent", "not testable here")) for line in report.parameters.values())
    assert report.parameters["logit_bias"].startswith("consistent")
    node = audit_sampler(partial(toy.processed_node, processing=ALL), "node", k=1, processing=ALL, inputs="logits",
                         extras=["history"], samples=1500, pairs=["dirichlet-1", "llm-like", "zeros-in-q"])
    assert node.verdict == "PASS", node.format()


@pytest.mark.parametrize("claim, skipped", [
    ("min_p", dict(min_p=None)),                      # vllm-project/vllm#42744: min-p on the bonus row only
    ("logit_bias", dict(logit_bias=())),              # the same issue: logit_bias on the bonus row only
    ("frequency_penalty", dict(frequency_penalty=0.0)),  # vllm-project/vllm#18902: dropped under speculation
    ("repetition_penalty", dict(repetition_penalty=1.0)),  # NVIDIA/TensorRT-LLM#17701: ignored on the one-model path
])
def test_a_claim_skipped_on_the_verified_rows_is_rejected_and_named(claim, skipped):
    buggy = partial(toy.processed_chain, processing=ALL, verified=replace(ALL, **skipped))
    report = audit_sampler(buggy, "chain", **CHAIN)
    assert report.verdict == "FAIL"
    named = [name for name, line in report.parameters.items() if line.startswith("FAIL")]
    assert named == [claim], report.parameters


@pytest.mark.parametrize("options, message", [
    (dict(processing=Processing(frequency_penalty=0.5), inputs="logits"), "declare the 'history' extra"),
    (dict(processing=Processing(repetition_penalty=1.2), extras=["history"]), "inputs='logits'"),
    (dict(processing=Processing(allowed=(4,), banned=(4,)), pairs=["dirichlet-1"]), "exclude every token"),
    (dict(processing=Processing(banned=(7,)), pairs=["dirichlet-1"]), "banned: token id 7 is outside"),
    (dict(processing=Processing(top_k=2), top_k=2), "inside processing=Processing"),
])
def test_claims_the_audit_cannot_serve_are_one_line_errors(options, message):
    with pytest.raises(ValueError, match=message):
        audit_sampler(toy.sps_node, "node", k=1, samples=10, **options)


MIXED = dict(gamma=3, inputs="logits", extras=["history", "processing"], samples=1200, families=["suite"])


def test_per_request_parameters_in_mixed_batches_name_the_combination_a_parameter_was_misread_in():
    """Each context is audited under three parameter combinations, rows shuffled into the same calls; a draft
    processed with the temperature of another row (a per-token buffer read per request) is caught there."""
    exact = audit_sampler(toy.processed_chain, "chain", **MIXED)
    assert exact.verdict == "PASS", exact.format()
    assert {test.context for test in exact.tests} >= {"suite [T = 1]", "suite [T = 0.5, top-k 3]",
                                                       "suite [T = 1.6, top-p 0.9]"}
    buggy = audit_sampler(partial(toy.processed_chain, per_token_buffer_bug=True), "chain", **MIXED)
    assert buggy.verdict == "FAIL"
    named = {test.context for test in buggy.rejected_tests if test.dimension == "law"}
    assert "suite [T = 1.6, top-p 0.9]" in named and named <= {test.context for test in exact.tests}


def test_a_grammar_mask_lost_on_the_verified_rows_breaks_the_contract_and_is_named():
    """The bug class of vllm-project/vllm#44006 / #54437 (mask rows lost past a padded slot), written anew: the
    verified target rows are not masked, the bonus row is."""
    mask = Processing(allowed=(0, 1, 2, 3))
    buggy = partial(toy.processed_chain, processing=mask, verified=Processing())
    report = audit_sampler(buggy, "chain", gamma=3, processing=mask, inputs="logits", extras=["history"], samples=800)
    assert report.verdict == "FAIL" and report.output.counts["token with p = 0"] > 0
    assert report.parameters["allowed"].startswith("FAIL")
    fixed = audit_sampler(partial(toy.processed_chain, processing=mask), "chain", gamma=3, processing=mask,
                          inputs="logits", extras=["history"], samples=800)
    assert fixed.verdict == "PASS", fixed.format()
