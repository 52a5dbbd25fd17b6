"""The explorer's model without a browser: the numbers it displays are the core's and the simulator's,
controls are flagged, bad edits are refused with a message."""

from __future__ import annotations

import numpy as np
import pytest

from resispec import VERIFIERS, get_verifier
from resispec.audit.exact import exact_law
from resispec.bounds import optimal_acceptance
from resispec.explore import model, presets
from resispec.sim import PairBatch, parse_source, step_stats
from resispec.verifiers.resispec.plan import schedule

P, Q, _ = presets.counterexample()


def test_counterexample_at_k_1_the_published_rule_is_biased_and_the_exact_verifiers_are_not():
    shown = model.display(model.State(P, Q, 1))
    numbers = {entry.name: entry for entry in shown.verifiers}
    paper = numbers["resispec_paper"]
    np.testing.assert_allclose(paper.law, [0.40, 0.48, 0.12], atol=1e-12)
    assert paper.max_error == pytest.approx(0.18, abs=1e-12) and paper.biased and not paper.claims_exact
    for entry in shown.verifiers:
        if entry.claims_exact:
            assert entry.max_error <= 1e-12 and not entry.biased, entry.name


def test_every_registered_verifier_is_shown_by_default_with_the_core_numbers():
    state = model.State(P, Q, 2)
    assert state.verifiers == tuple(VERIFIERS)
    shown = model.display(state)
    assert [entry.name for entry in shown.verifiers] == list(VERIFIERS)
    assert shown.bounds.iid == optimal_acceptance(P, Q, 2)
    for entry in shown.verifiers:
        verifier = get_verifier(entry.name)
        assert entry.claims_exact == verifier.claims_exact and entry.drafting == verifier.drafting
        if entry.refused:  # sps takes one candidate: the verifier's own message, nothing else
            assert entry.name in entry.refused and entry.law is None and entry.acceptance is None
            continue
        law = exact_law(entry.name, P, Q, 2)  # the audit's enumeration (the model may split it by step)
        np.testing.assert_allclose(entry.law, law.law, rtol=0, atol=1e-15)
        assert entry.max_error == pytest.approx(law.max_error, abs=1e-15)
        assert entry.acceptance == pytest.approx(law.acceptance, abs=1e-15)
        assert entry.acceptance == pytest.approx(verifier.acceptance(P, Q, 2), abs=1e-12)
        assert entry.optimum == shown.bounds.for_drafting(verifier.drafting)


def test_residuals_are_the_cores_step_laws_and_resispecs_are_its_residual_targets():
    p, q, _ = presets.dirichlet(0.5, 5, 1)
    (resispec, pooled) = model.display(model.State(p, q, 3, ("resispec", "pooled"))).verifiers
    plan = schedule(p, q, 3)
    for step in range(3):
        target = np.maximum(p - plan.T[0] * q, 0.0) + np.minimum(p, plan.T[step] * q)
        np.testing.assert_allclose(resispec.residuals[step], target / plan.R[step], atol=1e-12)
        assert resispec.reached[step] == pytest.approx(plan.R[step], abs=1e-12)
    assert pooled.residuals == [] and pooled.law is not None  # not sequential: a law, no steps


def test_drift_curves_are_the_simulators():
    p, q, _ = presets.dirichlet(0.5, 6, 3)
    state = model.State(p, q, 3, ("rrs", "resispec", "resispec_paper", "ears"))
    numbers = {entry.name: entry for entry in model.display(state).verifiers}
    for name in ("rrs", "resispec", "resispec_paper"):
        stats = step_stats(name, PairBatch.from_arrays(p[None], q[None]), 3, np.random.default_rng(0),
                           model.MONTE_CARLO)
        assert numbers[name].drift == [estimate.value for estimate in stats.drift_curve()]
        assert numbers[name].residual_tv == [estimate.value for estimate in stats.residual_curve()]
        assert numbers[name].drift_method == "exact"
    assert numbers["ears"].drift == [] and numbers["ears"].biased  # a control the simulator does not run


def test_the_law_is_not_enumerated_past_the_limit_and_the_note_says_why():
    p, q, _ = presets.dirichlet(1.0, 16, 0)
    (entry,) = model.display(model.State(p, q, 4, ("resispec",))).verifiers
    assert entry.law is None and entry.max_error is None and "65536 candidate tuples" in entry.law_note
    assert entry.acceptance == pytest.approx(get_verifier("resispec").acceptance(p, q, 4), abs=1e-12)


def test_the_live_draw_is_the_verifiers_own_and_reproducible():
    first = model.draw("resispec", P, Q, 3, seed=5)
    assert np.array_equal(first.candidates, model.draw("resispec", P, Q, 3, seed=5).candidates)
    verifier = get_verifier("resispec")
    assert (first.token, first.index) == verifier.verify(P, Q, first.candidates, first.uniforms)
    np.testing.assert_array_equal(first.conditional_law, verifier.conditional_law(P, Q, first.candidates))
    assert first.path(("a", "b", "c")).endswith(f"-> {'abc'[first.token]}")


@pytest.mark.parametrize("values, message", [
    ([0.5, -0.1, 0.6], "entry 1 is negative"),
    ([0.0, 0.0, 0.0], "all entries are zero"),
    ([0.5, float("nan"), 0.5], "entry 1 is not a finite number"),
    ([0.5, float("inf"), 0.5], "entry 1 is not a finite number"),
    ([1.0], "expected 2 to 16"),
    (["a", "b"], "expected numbers"),
])
def test_bad_edits_are_refused_with_a_message(values, message):
    with pytest.raises(ValueError, match=message):
        model.edited_distribution(values, "p (target)")


def test_an_edit_off_one_is_renormalised_with_a_note():
    edit = model.edited_distribution([2, 1, 1], "q (draft)")
    np.testing.assert_allclose(edit.values, [0.5, 0.25, 0.25])
    assert "renormalised" in edit.note and "q (draft)" in edit.note
    assert model.edited_distribution([0.5, 0.5], "q (draft)").note == ""


@pytest.mark.parametrize("change, message", [
    ({"k": 0}, "k: expected an integer in 1..6"), ({"k": 7}, "k: expected"),
    ({"verifiers": ("nope",)}, "verifiers: unknown nope"), ({"seed": -1}, "seed"),
    ({"q": np.array([0.5, 0.5])}, "different sizes"), ({"labels": ("a",)}, "labels"),
])
def test_bad_states_are_refused(change, message):
    with pytest.raises(ValueError, match=message):
        model.State(**{"p": P, "q": Q, "k": 1, **change})


def test_presets_are_the_simulators_pairs_and_the_logged_row_has_a_tail_bucket():
    p, q, _ = presets.dirichlet(0.7, 5, 2)
    batch = parse_source("dirichlet:alpha=0.7,V=5").sample(1, np.random.default_rng(2))
    np.testing.assert_array_equal(p, batch.p[0])
    np.testing.assert_array_equal(q, batch.q[0])
    for pair in (presets.zipf(1.1, 8, 0), presets.llm_like(0.5, 4, 8, 0)):
        assert pair[0].size == 8 and pair[0].sum() == pytest.approx(1)
    p, q, labels = presets.logged_row(3, 6)
    assert p.size == q.size == len(labels) == 6 and labels[-1] == presets.TAIL_LABEL
    assert p.sum() == pytest.approx(1) and q.sum() == pytest.approx(1)
    with pytest.raises(ValueError, match="row"):
        presets.logged_row(10_000, 6)
    with pytest.raises(ValueError, match="temperature"):
        presets.llm_like(0.0, 0, 8, 0)


def test_the_table_marks_controls_and_shows_bias_in_red():
    view = pytest.importorskip("resispec.explore.view", reason="the view needs the explore extra (panel)")
    html = view.numbers_table(model.display(model.State(P, Q, 1, ("resispec", "resispec_paper"))))
    assert "resispec_paper (control)" in html and '<td class="law bias">(0.4, 0.48, 0.12)</td>' in html
    assert '<td class="law exact">(0.4, 0.3, 0.3)</td>' in html


def test_the_page_refuses_a_bad_typed_edit_and_keeps_the_last_good_pair():
    view = pytest.importorskip("resispec.explore.view", reason="the view needs the explore extra (panel)")
    page = view.Explorer(verifiers=("resispec",))
    page.p_text.value = "0.5, nan, 0.5"
    assert "refused" in page.note.object and "not a finite number" in page.note.object
    np.testing.assert_array_equal(page.p_values, P)
    page.p_text.value = "2, 1, 1"
    assert "renormalised" in page.note.object
    np.testing.assert_allclose(page.p_values, [0.5, 0.25, 0.25])


def test_dragging_a_bar_top_renormalises_and_refuses_an_all_zero_distribution():
    view = pytest.importorskip("resispec.explore.view", reason="the view needs the explore extra (panel)")
    page = view.Explorer(verifiers=("resispec",))
    page._dragged("data", None, {"x": [0, 1, 2, 0, 1, 2], "y": [0.5, 0.5, -0.2, 0.6, 0.3, 0.1]})
    np.testing.assert_allclose(page.p_values, [0.5, 0.5, 0.0])
    assert page.p_text.value == "0.5, 0.5, 0" and "dragged" in page.note.object
    page._dragged("data", None, {"x": [0, 1, 2, 0, 1, 2], "y": [0.5, 0.5, 0.0, 0.0, 0.0, 0.0]})
    assert "all entries are zero" in page.note.object
    np.testing.assert_allclose(page.q_values, Q)


def test_token_labels_fall_back_to_ids_without_the_tokenizer(monkeypatch):
    from resispec.explore import tokens

    monkeypatch.setattr(tokens, "_tokenizer", lambda: None)
    assert tokens.decode_tokens([28, 436]) == ["#28", "#436"]
    _, _, labels = presets.logged_row(0, 4, tokens.decode_tokens)
    assert len(labels) == 4 and labels[-1] == presets.TAIL_LABEL
    assert all(label.startswith("#") and label[1:].isdigit() for label in labels[:-1])
