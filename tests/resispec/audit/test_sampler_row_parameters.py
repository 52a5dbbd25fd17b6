"""Per-request parameters in mixed batches for the whole processed law (``resispec.audit.sampler.row_parameters``):
rows of one call carry different temperature / top-k / top-p, min-p, logit bias, banned ids, penalties over their
own histories, allowed-token masks and min_tokens; an exact sampler passes with a verdict per row parameter; a
sampler that reads a parameter from the wrong row (tests/resispec/audit/row_samplers.py) is rejected with the
parameter and the combination named; what the audit cannot serve is a one-line error."""

import json
from functools import partial

import numpy as np
import pytest

from resispec.audit.sampler import SamplerError, audit_sampler
from resispec.audit.sampler.row_parameters import ROW_PARAMETERS, VARY, misread_claims, row_claims
from resispec.cli import main
from resispec.processing import Processing, process_probs
from tests.resispec.audit import engine_samplers as engine
from tests.resispec.audit import row_samplers as rows
from tests.resispec.audit import toy_samplers as toy

EVERY = tuple(VARY)
MIXED = dict(gamma=3, inputs="logits", extras=["history", "processing"], vary=EVERY, samples=1000)
PENALTIES = {"repetition_penalty", "presence_penalty", "frequency_penalty", "history"}


def failed(report) -> list[str]:
    return [name for name, line in report.row_parameters.items() if line.startswith("FAIL")]


def test_every_combination_is_a_context_with_its_own_claims_and_history():
    combos = row_claims(Processing(), EVERY, (0, 1, 1, 3), 6)
    assert len(combos) == 6 and len({(claims, history) for _, claims, history in combos}) == 6
    named = {combination.name: (claims, history) for combination, claims, history in combos}
    assert named["min-p 0.3, bias 1:+1.5, banned 0"][0].min_p == 0.3
    assert named["penalties 1.8/0.5/0.6, history 2,2,4,5,5"][1] == (2, 2, 4, 5, 5)
    assert row_claims(Processing(), ("mask",), (0,), 3)[1][1].allowed == (0, 2)  # ids folded into V = 3
    mine = named["claims"]
    alternatives = misread_claims(mine, {name: value for name, value in named.items() if name != "claims"})
    assert set(alternatives) == set(ROW_PARAMETERS)
    assert set(alternatives["temperature"]) == {"T 0.5, top-k 3", "T 1.6, top-p 0.9"}
    assert alternatives["history"]["penalties 1.8/0.5/0.6, history 2,2,4,5,5"][1] == (2, 2, 4, 5, 5)


def test_an_exact_sampler_passes_with_every_group_varied_and_a_verdict_per_row_parameter():
    report = audit_sampler(toy.processed_chain, "chain", **MIXED)
    assert report.verdict == "PASS", report.format()
    assert set(report.row_parameters) == set(ROW_PARAMETERS)
    assert all(line.startswith(("consistent", "not testable here")) for line in report.row_parameters.values())
    groups = {test.context for test in report.tests if test.context.startswith("[")}
    assert "[allowed 0,2,3,5, min_tokens 6 (eos 0)], batch positions 1-15" in groups and len(groups) == 18
    assert "rows vary sampling, bias, penalties, mask" in report.contract


@pytest.mark.parametrize("sampler", [rows.processed_zoo("sps"), rows.processed_zoo("block"),
                                     rows.mask_buffer_chain], ids=["zoo sps", "zoo block", "mask buffer (fixed)"])
def test_exact_zoo_samplers_and_the_fixed_twin_pass_with_every_option(sampler):
    claims = Processing(temperature=0.8, top_k=5, logit_bias=((2, 1.0),), repetition_penalty=1.3, banned=(4,))
    report = audit_sampler(sampler, "chain", processing=claims, families=["dirichlet"], **MIXED)
    assert report.verdict == "PASS", report.format()


@pytest.mark.parametrize("fields, named, seen_in", [
    (("min_p",), {"min_p"}, None),  # tokens min-p forbids: the output contract (those rows leave the law tests)
    (("repetition_penalty", "presence_penalty", "frequency_penalty", "history"), PENALTIES,
     "suite [T = 1, repetition_penalty 1.8, presence_penalty 0.5, frequency_penalty 0.6]"),
    (("allowed",), {"allowed"}, "suite [T = 1]"),  # the mask imposed on rows that claim none
])
def test_parameters_taken_from_row_0_are_rejected_with_the_parameter_and_the_combination_named(fields, named,
                                                                                              seen_in):
    """NVIDIA/TensorRT-LLM#17599 / PR #12588's class, written anew: every row processed with row 0's parameters."""
    report = audit_sampler(partial(rows.first_row_chain, fields=fields), "chain", **MIXED)
    assert report.verdict == "FAIL" and report.output.counts["token with p = 0"] > 0
    assert len(failed(report)) == 1 and failed(report)[0] in named, report.row_parameters
    assert seen_in is None or seen_in in {test.context for test in report.rejected_tests}


def test_a_mask_read_per_request_from_a_per_token_buffer_is_rejected_and_named():
    """vllm-project/vllm#44006 / #54437's class, written anew: grammar-bitmask rows read at the request's index."""
    report = audit_sampler(partial(rows.mask_buffer_chain, per_request=True), "chain", **MIXED)
    assert report.verdict == "FAIL" and report.output.counts["token with p = 0"] > 0
    assert failed(report) == ["allowed"], report.row_parameters
    assert report.row_parameters["allowed"].startswith("FAIL: rows of [allowed 0,2,3,5")


def test_node_rows_vary_every_group_too():
    report = audit_sampler(toy.processed_node, "node", k=1, inputs="logits", extras=["history", "processing"],
                           vary=EVERY, samples=600, pairs=["dirichlet-1", "zeros-in-q", "counterexample"])
    assert report.verdict == "PASS", report.format()
    assert {test.context for test in report.tests} >= {"dirichlet-1 [T = 1, allowed (0, 2, 3, 5), min_tokens 6]",
                                                       "counterexample [T = 1, allowed (0, 2), min_tokens 6]"}


def cannot_honour_min_p(p, q, drafts, history, processing):
    if any(claims.min_p is not None for claims in processing):
        raise NotImplementedError("min_p per row")
    return toy.processed_chain(p, q, drafts, history, processing)


def truncated_extras(p, q, drafts, history, processing):
    n = len(processing) - 1  # one row short: the output has the wrong shape
    return toy.processed_chain(p[:n], q[:n], drafts[:n], history[:n], processing[:n])


@pytest.mark.parametrize("options, message", [
    (dict(vary=["colour"]), "vary: unknown 'colour'; known: sampling, bias, penalties, mask"),
    (dict(extras=["history"], vary=["bias"]), "through the 'processing' extra"),
    (dict(extras=["processing"], vary=["mask"]), r"\[allowed 0,2,3,5, min_tokens 6 \(eos 0\)\] acts on each row's "
                                                 "history; declare the 'history' extra"),
    (dict(inputs="probs", vary=["penalties"]), "repetition penalty, which depends on the logits' sign"),
    (dict(processing=Processing(banned=(3, 5)), vary=["mask"]),  # with the mask's eos held back: id 2 alone left
     r"exclude every token .*\(context \w+ \[T = 1, banned \(3, 5\), allowed \(0, 2, 3, 5\), min_tokens 6\]"),
])
def test_what_the_audit_cannot_serve_is_a_one_line_error(options, message):
    arguments = {**MIXED, "samples": 20, **options}
    with pytest.raises(ValueError, match=message) as error:
        audit_sampler(toy.processed_chain, "chain", **arguments)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("sampler, message", [(cannot_honour_min_p, "raised NotImplementedError: min_p per row"),
                                              (truncated_extras, "returned shape")])
def test_a_sampler_that_cannot_honour_a_row_or_misreads_the_extras_is_one_line(sampler, message):
    with pytest.raises(SamplerError, match=message):
        audit_sampler(sampler, "chain", **{**MIXED, "samples": 20})


SAMPLER_FILE = '''
from tests.resispec.audit.row_samplers import mask_buffer_chain

def per_request(p, q, drafts, history, processing):
    return mask_buffer_chain(p, q, drafts, history, processing, per_request=True)
'''


def test_the_cli_varies_rows_names_the_parameter_and_refuses_what_it_cannot_serve(tmp_path, capsys):
    path = tmp_path / "masks.py"
    path.write_text(SAMPLER_FILE)
    common = ["--level", "chain", "--gamma", "3", "--inputs", "logits", "--extras", "history", "processing",
              "--samples", "500", "--json"]
    assert main(["audit-sampler", f"{path}:per_request", *common, "--vary", "mask", "bias"]) == 1
    record = json.loads(capsys.readouterr().out)
    assert record["row_parameters"]["allowed"].startswith("FAIL")
    assert "[allowed 0,2,3,5, min_tokens 6 (eos 0)], batch positions 1-15" in {t["context"] for t in record["tests"]}
    assert main(["audit-sampler", f"{path}:per_request", "--level", "chain", "--extras", "history", "processing",
                 "--vary", "penalties"]) == 2  # probabilities handed over: the repetition penalty needs logits
    err = capsys.readouterr().err.strip()
    assert err.startswith("resispec audit-sampler: error: vary:") and "logits' sign" in err and "\n" not in err


def test_engine_drafts_are_checked_against_each_rows_own_processed_q():
    """A node sampler drafting from each row's own processed q (top-k 2 claimed; the varied rows T 0.5 / top-k 3
    and T 1.6 / top-p 0.9 keep tokens top-k 2 drops): no draft is outside its row's support, and it passes (checked
    against the claims' q instead, 200-odd drafts were flagged and the rows dropped)."""
    def node(p, q, k, seeds=None, positions=None, processing=None):
        p, q = (np.stack([process_probs(row[None], claims)[0] for row, claims in zip(rows_, processing)])
                for rows_ in (p, q))
        return engine.engine_node(p, q, k, seeds=seeds, positions=positions)

    report = audit_sampler(node, "node", k=1, drafting="engine", extras=["seeds", "positions", "processing"],
                           processing=Processing(top_k=2), vary=("sampling",), samples=1500,
                           pairs=["dirichlet-1", "zeros-in-q"])
    assert report.output.clean and report.verdict == "PASS", report.format()
