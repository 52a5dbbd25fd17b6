"""``--tree auto``: the shape search against brute force, and calibration end to end on the tiny models."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch

from resispec.engine.decode.adaptive import OnlineShapes
from resispec.engine.decode.calibration import (
    COST_POINTS,
    DRAFT_COST_POINTS,
    Calibration,
    cached_calibration,
    calibrate,
    calibration_key,
    describe,
    loop_overheads,
    machine_identity,
    measure_acceptance,
    refresh_calibration,
    truncated_pair,
)
from resispec.engine.decode.decoding import RoundRecord
from resispec.engine.decode.processing import Sampling
from resispec.engine.decode.tree_search import (
    MAX_DEPTH,
    MAX_NODES,
    TreeChoice,
    best_tree,
    expected_tokens,
    survival_correlation,
)
from resispec.engine.drafts.ngram import NGramDraft
from resispec.engine.model.tiny import tiny_pair
from resispec.engine.runtime.tree_lm import TreeLM


def _brute_force(acceptance, target_cost, draft_cost, round_cost, max_nodes, max_depth, max_children,
                 correlation=None):
    best = None
    for depth in range(1, max_depth + 1):
        for branching in itertools.product(range(1, max_children + 1), repeat=depth):
            widths = list(itertools.accumulate(branching, lambda a, b: a * b))
            nodes = 1 + sum(widths)
            if nodes > max_nodes:
                continue
            seconds = sum(draft_cost(w) for w in [1] + widths[:-1]) + target_cost(nodes) + round_cost
            rate = expected_tokens(branching, acceptance, correlation) / seconds
            if best is None or rate > best[0]:
                best = (rate, branching)
    return best


@pytest.mark.parametrize("acceptance, flat", [((0.96, 0.97, 0.975), True), ((0.4, 0.6, 0.7), True),
                                              ((0.96, 0.97, 0.975), False), ((0.5, 0.8, 0.9), False)])
def test_best_tree_is_the_brute_force_optimum(acceptance, flat):
    target_cost = (lambda n: 0.040 + 0.0005 * n) if flat else (lambda n: 0.040 * n)
    draft_cost = lambda w: 0.008 + 0.001 * w  # noqa: E731
    choice = best_tree(acceptance, target_cost, draft_cost, 0.002, max_nodes=20, max_depth=6, max_children=3)
    rate, branching = _brute_force(acceptance, target_cost, draft_cost, 0.002, 20, 6, 3)
    assert choice.branching == branching
    assert choice.tokens_per_second == pytest.approx(rate, rel=1e-12)


def test_survival_correlation_is_the_windowed_product_over_the_power_of_the_mean():
    runs = [[1.0, 0.5, 1.0], [0.5]]  # mean 0.75; windows of 2: (1, .5), (.5, 1) -> mean product 0.5
    kappas = survival_correlation(runs, max_depth=4)
    assert kappas[0] == pytest.approx(1.0)
    assert kappas[1] == pytest.approx(0.5 / 0.75**2)
    assert kappas[2] == pytest.approx(0.5 / 0.75**3)  # the one window of 3
    assert kappas[3] == kappas[2]  # no window of 4: the last measured value
    steady = survival_correlation([[0.9] * 20])
    assert steady == pytest.approx([1.0] * len(steady))  # a constant acceptance: independent positions
    with pytest.raises(ValueError, match="acceptance_runs"):
        survival_correlation([[1.5]])


def test_correlated_positions_shorten_the_chosen_chain_and_match_brute_force():
    acceptance = (0.97,)
    target_cost, draft_cost = (lambda n: 0.050 + 0.004 * n), (lambda w: 0.02)
    independent = best_tree(acceptance, target_cost, draft_cost, 0.003)
    decaying = [0.995 ** d for d in range(12)]  # surviving d positions is rarer than 0.97^d
    correlated = best_tree(acceptance, target_cost, draft_cost, 0.003, correlation=decaying)
    assert len(correlated.branching) < len(independent.branching)
    assert correlated.tokens_per_round == pytest.approx(expected_tokens(correlated.branching, acceptance, decaying))
    rate, branching = _brute_force(acceptance, target_cost, draft_cost, 0.003, 32, 12, 1, decaying)
    assert correlated.branching == branching and correlated.tokens_per_second == pytest.approx(rate, rel=1e-12)
    with pytest.raises(ValueError, match="correlation"):
        best_tree(acceptance, target_cost, draft_cost, correlation=[1.0] * 3)


def test_an_expensive_multi_candidate_verification_makes_the_tree_a_chain():
    acceptance = (0.5, 0.75, 0.85, 0.9)
    cheap = best_tree(acceptance, lambda n: 0.04, lambda w: 0.001)
    costly = best_tree(acceptance, lambda n: 0.04, lambda w: 0.001, verify_cost=lambda k: 0.0 if k == 1 else 0.5)
    assert max(cheap.branching) > 1 and set(costly.branching) == {1}
    seconds = 0.04 + 0.001 * len(costly.branching)  # verification of one candidate: free here
    assert costly.seconds_per_round == pytest.approx(seconds)


def test_best_tree_follows_the_costs():
    cheap_rows = best_tree((0.5, 0.75, 0.85, 0.9), lambda n: 0.04, lambda w: 0.001)
    costly_rows = best_tree((0.5, 0.75, 0.85, 0.9), lambda n: 0.04 * n, lambda w: 0.001)
    assert sum(cheap_rows.branching) > len(cheap_rows.branching)  # flat cost: a wide tree pays
    assert costly_rows.branching == (1,)  # each node costs a forward: one candidate is best
    with pytest.raises(ValueError, match="acceptance"):
        best_tree((1.2,), lambda n: 1.0, lambda w: 1.0)


def test_plain_decoding_competes_and_wins_only_where_no_tree_is_faster():
    acceptance = (0.8, 0.9)
    target_cost = lambda n: 0.040 + 0.010 * (n - 1)  # noqa: E731  (a node costs a quarter of a forward)
    for draft_seconds, speculates in ((0.002, True), (0.040, False)):  # a cheap draft pays, one as dear as p not
        tree = best_tree(acceptance, target_cost, lambda w: draft_seconds, 0.001)
        choice = best_tree(acceptance, target_cost, lambda w: draft_seconds, 0.001, plain=True)
        plain_rate = 1 / (target_cost(1) + 0.001)  # one token per one-row forward, plus the round's bookkeeping
        assert tree.branching and (tree.tokens_per_second > plain_rate) == speculates  # plain=False never ()
        assert choice == (tree if speculates else TreeChoice((), 1.0, target_cost(1) + 0.001))
        assert choice.tokens_per_second == pytest.approx(max(tree.tokens_per_second, plain_rate), rel=1e-12)


def test_truncated_pair_keeps_the_top_tokens_and_the_tail_mass():
    p, q = torch.softmax(torch.randn(100, generator=torch.Generator().manual_seed(0)), 0).double().numpy(), None
    q = p[::-1].copy()
    p_cut, q_cut = truncated_pair(p, q, support=8)
    assert p_cut.shape == (9,) and p_cut.sum() == pytest.approx(1.0) and q_cut.sum() == pytest.approx(1.0)


def test_acceptance_curve_uses_the_verifier_and_grows_with_k():
    generator = torch.Generator().manual_seed(1)
    p = torch.softmax(torch.randn(6, 40, generator=generator) * 2, -1).double().numpy()
    q = torch.softmax(torch.randn(6, 40, generator=generator) * 2, -1).double().numpy()
    curve = measure_acceptance(p, q, "resispec", 3)
    assert curve[0] == pytest.approx(float((p.clip(max=q)).sum(1).mean()), abs=1e-12)
    assert curve[0] < curve[1] < curve[2] <= 1
    assert len(measure_acceptance(p, q, "sps", 3)) == 1
    wor = measure_acceptance(p, q, "rrs_wor", 4)  # enumerating verifiers fall back to fewer tokens
    assert len(wor) == 4 and wor[0] == pytest.approx(curve[0], abs=1e-12) and wor[0] < wor[1] < wor[3] <= 1


def test_acceptance_rounding_above_one_is_clipped_and_more_is_an_error(monkeypatch):
    import resispec.engine.decode.calibration as calibration

    p = np.full((2, 5), 0.2)
    monkeypatch.setattr(calibration, "_truncated_acceptance", lambda rule, p, q, k: 1.0000000000000004)
    assert measure_acceptance(p, p, "resispec_wor", 3) == [1.0, 1.0, 1.0]  # resispec_wor at p = q, as measured
    monkeypatch.setattr(calibration, "_truncated_acceptance", lambda rule, p, q, k: 1.01)
    with pytest.raises(ValueError, match="left \\[0, 1\\]"):
        measure_acceptance(p, p, "resispec_wor", 3)


def test_calibration_runs_on_tiny_models_and_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("RESISPEC_CACHE", str(tmp_path))
    p_model, q_model = tiny_pair(0)
    prompts = [torch.tensor([1, 2, 3]), torch.tensor([4, 5])]
    calibration = calibrate(p_model, TreeLM(q_model), "rrs", Sampling(1.0), prompts, new_tokens=6, max_children=3,
                            repeats=1)
    assert len(calibration.acceptance) == 3 and calibration.positions == 12
    assert len(calibration.correlation) == MAX_DEPTH and calibration.correlation[0] == pytest.approx(1.0)
    assert sorted(calibration.verify_seconds) == [1, 2, 3] and all(s > 0 for s in calibration.verify_seconds.values())
    assert all(seconds > 0 for seconds in calibration.target_seconds.values())
    assert tuple(calibration.target_seconds) == COST_POINTS and tuple(calibration.draft_seconds) == DRAFT_COST_POINTS
    choice = calibration.choose()
    assert 1 <= len(choice.branching) and choice.tokens_per_round >= 1
    stored, cached = cached_calibration("k", lambda: calibration)
    again, cached_again = cached_calibration("k", lambda: pytest.fail("recomputed"))
    assert (cached, cached_again) == (False, True) and again == stored and isinstance(again, Calibration)
    made = again.made
    assert set(made) == {"date", "load", "cpu", "torch", "capability", "block_kernels", "threads"}
    assert made["torch"] == torch.__version__
    assert made["date"].startswith("20") and len(made["load"]) == 2 and made["threads"] == torch.get_num_threads()
    assert "thread(s), torch" in describe(made) and made["date"] in describe(made)
    assert f"block kernels {made['block_kernels']}" in describe(made)


def test_a_calibration_from_another_machine_or_torch_is_not_used(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RESISPEC_CACHE", str(tmp_path))
    calibration = _small_calibration()
    cached_calibration("k", lambda: calibration)
    path = tmp_path / "calibration" / "k.json"
    for field, value in (("cpu", "Other CPU; AVX2"), ("torch", "2.0.0"), ("capability", "AVX2")):
        stored = json.loads(path.read_text())
        path.write_text(json.dumps({**stored, "made": {**stored["made"], field: value}}))
        again, cached = cached_calibration("k", lambda: calibration)
        assert not cached and again == calibration
        assert "made elsewhere" in capsys.readouterr().err


def test_the_key_names_the_machine(monkeypatch):
    import resispec.engine.decode.calibration as calibration_module

    model, _ = tiny_pair(0)
    key = calibration_key(model, "int4", "rrs", Sampling(1.0), 1)
    other = {"cpu": "x", "torch": "y", "capability": "AVX2"}
    monkeypatch.setattr(calibration_module, "machine_identity", lambda: other)
    assert calibration_key(model, "int4", "rrs", Sampling(1.0), 1) != key


def test_a_calibration_found_far_off_is_refreshed(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RESISPEC_CACHE", str(tmp_path))
    stale = _small_calibration()
    cached_calibration("k", lambda: stale)
    capsys.readouterr()
    online = OnlineShapes(stale)
    for _ in range(10):
        online.observe(RoundRecord((), 1, 0.05, 1, 0.04))
    reason = online.far_off()
    assert reason and "40.0 ms here against 10.0 ms" in reason
    refresh_calibration("k", online.refreshed(), reason)
    assert "far off this run (a target forward" in capsys.readouterr().err
    again, cached = cached_calibration("k", lambda: pytest.fail("recalibrated"))
    assert cached and again.target_cost(1) == pytest.approx(0.04) and again.acceptance == stale.acceptance
    assert again.made["refreshed"] and again.made["date"] == stale.made["date"] and "refreshed" in describe(again.made)


def test_the_search_never_asks_the_draft_for_more_rows_than_calibration_measures():
    asked = []

    def draft_cost(rows: int) -> float:
        asked.append(rows)
        return 0.001 * rows

    best_tree([0.9, 0.95, 0.97, 0.98], lambda n: 0.01 + 0.0001 * n, draft_cost, 0.0, max_nodes=MAX_NODES)
    assert max(asked) <= (MAX_NODES - 1) // 2 <= max(DRAFT_COST_POINTS) < max(COST_POINTS)


def _small_calibration() -> Calibration:
    return Calibration(acceptance=[0.5, 0.7], target_seconds={1: 0.01, 2: 0.012}, draft_seconds={1: 0.004},
                       round_seconds=0.001, positions=4, correlation=[1.0, 0.9], verify_seconds={1: 0.001},
                       plain_round_seconds=0.0005, made={"date": "2026-12-07T20:00:00+00:00", "load": [2.5, 2.7],
                                                         **machine_identity(), "threads": 1})


@pytest.mark.parametrize("damage, reason", [
    (lambda text: text[: len(text) // 2], "JSONDecodeError"),
    (lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "round_seconds"}), "KeyError"),
    (lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "plain_round_seconds"}), "KeyError"),
    (lambda text: json.dumps({**json.loads(text), "positions": [4]}), "TypeError"),
    (lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "format"}), "KeyError"),
])
def test_a_damaged_cached_calibration_is_named_discarded_and_measured_again(tmp_path, monkeypatch, capsys, damage,
                                                                           reason):
    monkeypatch.setenv("RESISPEC_CACHE", str(tmp_path))
    calibration = _small_calibration()
    cached_calibration("k", lambda: calibration)
    path = tmp_path / "calibration" / "k.json"
    path.write_text(damage(path.read_text()))
    again, cached = cached_calibration("k", lambda: calibration)
    lines = capsys.readouterr().err.strip().splitlines()
    assert (again, cached) == (calibration, False) and len(lines) == 3  # the first run's line, the discard, the rerun's
    assert str(path) in lines[1] and reason in lines[1] and "calibrating again" in lines[1]
    assert lines[0] == lines[2] and lines[2].startswith("resispec: calibrating --tree auto") and str(path) in lines[2]
    assert cached_calibration("k", lambda: pytest.fail("recomputed")) == (calibration, True)


def test_calibration_measures_only_the_rounds_a_draft_does_not_decline(tmp_path, monkeypatch):
    """The n-gram draft drafts where a suffix recurs; the other positions are one-token rounds, not measured."""
    monkeypatch.setenv("RESISPEC_CACHE", str(tmp_path))
    p_model, _ = tiny_pair(0)
    prompts = [torch.tensor([1, 2, 1, 3]), torch.tensor([4, 5, 4])]
    draft = NGramDraft(8, max_n=3, min_n=1)
    calibration = calibrate(p_model, draft, "rrs", Sampling(1.0), prompts, new_tokens=6, max_children=2, repeats=1)
    assert 0 < calibration.positions < 12
    assert calibration.round_seconds >= 0 and calibration.plain_round_seconds >= 0  # what real decoding added
    with pytest.raises(ValueError, match="the draft drafts at none of the 2 calibration texts' positions"):
        calibrate(p_model, NGramDraft(8, max_n=20, min_n=20), "rrs", Sampling(1.0), prompts, new_tokens=6,
                  max_children=2, repeats=1)


def test_plain_decoding_is_charged_its_own_overhead():
    """T(plain) = t(1) + v_plain; a round's T takes v: a dear round overhead leaves plain decoding the choice,
    a dear plain overhead hands it to the tree."""
    def target(n: int) -> float:
        return 0.010 + 0.002 * (n - 1)

    def draft(rows: int) -> float:
        return 0.001

    cheap_plain = best_tree([0.6], target, draft, round_cost=0.004, plain=True, plain_cost=0.0)
    assert cheap_plain.branching == () and cheap_plain.seconds_per_round == pytest.approx(0.010)
    dear_plain = best_tree([0.6], target, draft, round_cost=0.004, plain=True, plain_cost=0.004)
    assert dear_plain.branching and dear_plain.tokens_per_second > 1 / 0.014
    assert best_tree([0.6], target, draft, round_cost=0.004, plain=True) == dear_plain  # v_plain defaults to v


def test_loop_overheads_are_what_real_decoding_spends_beyond_the_model():
    """Charged nothing, the whole per-token and per-round time is overhead; charged more than it, none; a draft
    that drafts no round has its rounds charged as plain tokens."""
    p_model, q_model = tiny_pair(0)
    prompt = torch.tensor([1, 2, 3])
    plain, round_ = loop_overheads(p_model, TreeLM(q_model), "rrs", Sampling(1.0), prompt, 0.0, 0.0, tokens=8)
    assert plain > 0 and round_ > 0
    assert loop_overheads(p_model, TreeLM(q_model), "rrs", Sampling(1.0), prompt, 10.0, 10.0, tokens=8) == (0, 0)
    silent = NGramDraft(8, max_n=20, min_n=20)  # no suffix of 20 tokens recurs: every round is one token
    plain, round_ = loop_overheads(p_model, silent, "rrs", Sampling(1.0), prompt, 0.0, 0.0, tokens=8)
    assert round_ == plain > 0
