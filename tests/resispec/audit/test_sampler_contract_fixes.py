"""The contract's fixes from the adapters: target logits with draft probabilities, caller-drawn bonus tokens,
generators as ``{row: generator}``, the branching handed to tree verifiers, distinct test names in the JSON; a
vLLM-layout rejection sampler written here (tests/resispec/audit/vllm_style.py) audits with 5 lines of glue."""

import inspect

import numpy as np
import pytest

from resispec.audit.sampler import zoo_sampler
from resispec.audit.sampler.audit import audit_sampler  # in process: the tests watch the sampler's calls
from tests.resispec.audit import vllm_style

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.usefixtures("one_torch_thread")

VLLM = dict(gamma=4, arrays="torch", dtype="float32", inputs="target-logits",
            extras=["lengths", "bonus", "generator_map"], rule="sps", samples=1000)


def test_a_vllm_layout_sampler_passes_with_five_lines_of_glue():
    report = audit_sampler(vllm_style.vllm_chain, "chain", probe_edges=True, **VLLM)
    assert report.verdict == "PASS", report.format()
    assert report.coverage["rounds fully accepted (bonus token emitted)"] > 0
    assert report.edges_tested and report.output.rows == 2000
    body = inspect.getsource(vllm_style.vllm_chain).strip().splitlines()[1:]
    assert len(body) == vllm_style.GLUE_LINES <= 10


def test_a_sampler_that_ignores_the_bonus_token_handed_in_breaks_the_contract():
    def own_bonus(p, q, drafts, lengths, bonus, generator_map):
        return vllm_style.vllm_chain(p, q, drafts, lengths, (bonus + 1) % p.shape[-1], generator_map)

    report = audit_sampler(own_bonus, "chain", **{**VLLM, "samples": 200})
    assert report.verdict == "FAIL"
    assert report.output.counts["bonus token differs from the one handed in"] > 0


def test_generator_maps_hold_the_seeded_rows_only():
    seen = []

    def record(p, q, candidates, generator_map):
        seen.append(sorted(generator_map))
        return candidates[:, 0]

    audit_sampler(record, "node", k=1, arrays="torch", extras=["generator_map"], samples=100, pairs=["p-equals-q"])
    assert any(0 < len(rows) < 64 for rows in seen)  # the mixed batch of 64 rows
    assert all(isinstance(row, int) for rows in seen for row in rows)


def test_a_tree_verifier_that_needs_the_branching_gets_it_in_two_lines():
    def tree(p, q, paths, branching):
        return zoo_sampler("rrs", "tree", branching)(p, q, paths)

    report = audit_sampler(tree, "tree", branching=(2, 2), extras=["branching"], samples=400,
                           families=["dirichlet"])
    assert report.verdict == "PASS", report.format()


def test_target_logits_and_draft_probabilities_are_handed_as_declared():
    shapes = []

    def look(p, q, candidates):
        shapes.append((bool((p < 0).any() or (p > 1).any()), bool(np.allclose(q.sum(-1), 1.0))))
        return candidates[:, 0]

    audit_sampler(look, "node", k=1, inputs="target-logits", samples=20, pairs=["dirichlet-1"])
    assert all(logits and probs for logits, probs in shapes)


def test_every_test_has_a_distinct_name_in_the_json():
    report = audit_sampler(zoo_sampler("rrs"), "node", samples=100, pairs=["dirichlet-1"])
    names = [record["test"] for record in report.to_dict()["tests"]]
    assert len(names) == len(set(names)) and "randomized PIT, batch position 0" in names


@pytest.mark.parametrize("options, message", [
    (dict(level="node", extras=["bonus"]), "'bonus' applies to level='chain'"),
    (dict(level="chain", extras=["branching"]), "'branching' applies to level='tree'"),
    (dict(level="node", extras=["generator_map"]), "needs arrays='torch'"),
])
def test_extras_out_of_place_are_one_line_errors(options, message):
    with pytest.raises(ValueError, match=message):
        audit_sampler(vllm_style.vllm_chain, samples=10, **options)


def test_a_tree_verifier_that_keeps_one_q_row_per_parent_passes():
    from resispec.audit.sampler.drafting import path_slots, tree_nodes

    def tree(p, q, paths, branching):  # q (B, N, V): one row per parent, breadth first
        index = {prefix: n for n, (prefix, _) in enumerate(tree_nodes(branching))}
        per_path = q[:, [[index[tuple(s[:d])] for d in range(len(branching))] for s in path_slots(branching).tolist()]]
        return zoo_sampler("rrs", "tree", branching)(p, per_path, paths)

    report = audit_sampler(tree, "tree", branching=(2, 2), q_layout="parent", extras=["branching"],
                           samples=400, families=["dirichlet"])
    assert report.verdict == "PASS", report.format()
    with pytest.raises(ValueError, match="'parent' at level='tree'"):
        audit_sampler(tree, "chain", q_layout="parent", samples=10)


def test_a_verifier_bound_to_a_model_audits_through_fake_model():
    from resispec.audit.sampler import fake_model

    def mcsd_like_verify(model, hidden, q, candidates):  # computes the target's rows itself
        return zoo_sampler("rrs")(model.lm_head(hidden), q, candidates)

    model = None

    def sampler(p, q, candidates):
        nonlocal model
        model = fake_model(p)
        return mcsd_like_verify(model, "hidden states", q, candidates)

    report = audit_sampler(sampler, "node", rule="rrs", samples=300, pairs=["dirichlet-1", "zeros-in-q"])
    assert report.verdict == "PASS" and model.calls == 1
