"""Bad samplers and bad options: a clear verdict or a one-line SamplerError / ValueError, never a traceback;
the output contract's checks; "nothing tested" is never a pass."""

import time

import numpy as np
import pytest

from resispec.audit.sampler import SamplerError, audit_sampler, zoo_sampler
from resispec.audit.sampler.checks import ContractLog, check_rows
from resispec.cli.output import strict_json

FAST = dict(samples=50, pairs=["dirichlet-1"])


def exact_node(p, q, candidates):
    return zoo_sampler("rrs")(p, q, candidates)


@pytest.mark.parametrize("sampler, message", [
    (lambda p, q, c: c[:, 0].astype(np.float32), "returned float32 values"),
    (lambda p, q, c: c, "returned shape (1, 2)"),
    (lambda p, q, c: list(c[:, 0]), "returned list"),
    (lambda p, q, c: c[:, 0] > 0, "returned bool values"),
    (lambda p, q, c: 1 / 0, "raised ZeroDivisionError: division by zero"),
    (lambda p, q: p, "raised TypeError"),
])
def test_a_sampler_outside_the_contract_is_a_one_line_sampler_error(sampler, message):
    with pytest.raises(SamplerError) as raised:
        audit_sampler(sampler, "node", **FAST)
    text = str(raised.value)
    assert message in text and "call 1" in text and "\n" not in text


def test_a_hanging_sampler_is_stopped_at_the_time_limit():
    start = time.perf_counter()
    with pytest.raises(SamplerError, match="did not return within the time limit of 0.3 s"):
        audit_sampler(lambda p, q, c: time.sleep(30), "node", time_limit=0.3, **FAST)
    assert time.perf_counter() - start < 10


def test_ids_out_of_range_are_a_rejection_naming_the_rows():
    report = audit_sampler(lambda p, q, c: np.full(c.shape[0], p.shape[1]), "node", **FAST)
    assert report.verdict == "FAIL"
    assert report.output.counts["id out of range"] == 50 and "id 6" in report.output.examples["id out of range"]


def chain_output(kind):
    def sampler(p, q, drafts, lengths=None):
        out = np.full((drafts.shape[0], drafts.shape[1] + 1), -1)
        if kind == "hole":
            out[:, 1] = drafts[:, 1]
        elif kind == "mismatch":
            out[:, 0], out[:, 1] = (drafts[:, 0] + 1) % p.shape[2], 0
        elif kind == "long":
            out[:, :] = 0
        return out
    return sampler


@pytest.mark.parametrize("kind, violation", [("hole", "hole before -1"), ("empty", "no token emitted"),
                                             ("mismatch", "emitted draft differs from the drafted token")])
def test_chain_outputs_that_break_the_contract_are_rejected(kind, violation):
    report = audit_sampler(chain_output(kind), "chain", gamma=2, samples=30, families=["dirichlet"])
    assert report.verdict == "FAIL" and report.output.counts[violation] == 30


def test_more_tokens_than_a_short_chain_allows_are_rejected():
    report = audit_sampler(chain_output("long"), "chain", gamma=2, samples=30, families=["dirichlet"],
                           extras=["lengths"])
    assert report.output.counts["longer than the chain"] > 0


def test_the_tree_check_follows_any_drafted_path():
    paths = np.array([[[1, 2], [3, 4]]])
    p = np.full((1, 2, 3, 6), 1 / 6)
    log = ContractLog()
    out = np.array([[3, 4, 0], [1, 4, 0], [3, 2, -1]])
    clean, path = check_rows("tree", out, np.repeat(p, 3, 0), np.repeat(paths, 3, 0), np.full(3, 2), log)
    assert clean.tolist() == [True, False, True] and path.tolist() == [1, 0, 1]
    assert log.counts["emitted draft differs from the drafted token"] == 1


def test_an_audit_that_saw_nothing_is_not_a_pass():
    report = audit_sampler(exact_node, "node", samples=1, pairs=["one-hot-p"])
    assert report.verdict == "UNTESTED" and not report.passed
    assert not any(test.tested for test in report.tests)


@pytest.mark.parametrize("options, message", [
    (dict(level="forest"), "level: expected one of node, chain, tree"),
    (dict(k=0), "k: expected an integer in [1, 8]"),
    (dict(extras=["seed"]), "extras: unknown 'seed'"),
    (dict(extras=["generators"]), "needs arrays='torch'"),
    (dict(drafting="beam"), "drafting: expected one of iid, wor, topk"),
    (dict(rule="rrs_wor"), "rule: rrs_wor drafts by wor"),
    (dict(rule="bogus"), "unknown verifier 'bogus'"),
    (dict(top_p=1.5), "top_p: must be a number in (0, 1]"),
    (dict(samples=0), "samples"),
    (dict(pairs=["nope"]), "pairs: unknown pair name"),
])
def test_bad_options_name_the_argument(options, message):
    options = {"level": "node", **FAST, **options}
    with pytest.raises(ValueError) as raised:
        audit_sampler(exact_node, **options)
    assert message in str(raised.value)


def test_the_report_is_reproducible_from_its_seed():
    first = audit_sampler(zoo_sampler("rrs"), "node", samples=200, pairs=["dirichlet-1"], seed=3)
    second = audit_sampler(zoo_sampler("rrs"), "node", samples=200, pairs=["dirichlet-1"], seed=3)
    other = audit_sampler(zoo_sampler("rrs"), "node", samples=200, pairs=["dirichlet-1"], seed=4)
    assert strict_json(first.to_dict()) == strict_json(second.to_dict()) != strict_json(other.to_dict())


def test_an_acceptance_test_past_the_enumeration_is_listed_as_skipped():
    report = audit_sampler(zoo_sampler("rrs", "tree", (3, 3)), "tree", branching=(3, 3), rule="rrs", samples=50,
                           families=["dirichlet"])
    assert not any(test.name == "accepted depth" for test in report.tests)
    assert report.skipped and "accepted depth, dirichlet" in report.skipped[0]


def test_a_sampler_that_overwrites_its_drafts_cannot_hide_a_mismatch():
    def overwrite(p, q, drafts):
        out = np.full((drafts.shape[0], drafts.shape[1] + 1), -1)
        out[:, :2] = (drafts[:, :2] + 1) % p.shape[2]
        drafts[:, :1] = out[:, :1]  # written back into the argument
        return out
    report = audit_sampler(overwrite, "chain", gamma=2, samples=30, families=["dirichlet"])
    assert report.output.counts["emitted draft differs from the drafted token"] == 30
