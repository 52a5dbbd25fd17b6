"""The online cost model (`resispec.engine.decode.adaptive`) and the decoder under shapes that change mid-run."""

from __future__ import annotations

import pytest
import torch

from resispec.engine.decode.adaptive import FIRST_PROBE, LONGEST_GAP, PLAIN, PROBE_BUDGET, OnlineShapes
from resispec.engine.decode.calibration import COST_POINTS, DRAFT_COST_POINTS, Calibration
from resispec.engine.decode.decoding import KEPT_CHANGES, Decoder, RoundRecord, ShapeChanges
from resispec.engine.decode.processing import Sampling
from resispec.engine.drafts.layer_skip import LayerSkipDraft
from resispec.engine.runtime.tree_lm import TreeLM

SHAPES = (PLAIN, (1, 1), (3, 2, 1), (1,))


class ContextShapes:
    """A shape from the context alone (the last token picks one of ``SHAPES``): changes every few tokens."""

    def __init__(self, shapes=SHAPES) -> None:
        self.shapes, self.changes, self.seen = shapes, ShapeChanges(), []

    def next_shape(self, emitted: int, context: list[int]) -> tuple[int, ...]:
        return self.shapes[context[-1] % len(self.shapes)]

    def observe(self, record: RoundRecord) -> None:
        self.seen.append(record)


def prior(acceptance=(0.6, 0.7, 0.75, 0.8), one_row=0.016, per_row=0.003, draft_row=0.002, loop=0.003,
          plain_loop=0.002) -> Calibration:
    """A calibration of this machine's orders of magnitude (seconds)."""
    return Calibration(list(acceptance), {n: one_row + per_row * (n - 1) for n in COST_POINTS},
                       {w: draft_row * (1 + 0.3 * (w - 1)) for w in DRAFT_COST_POINTS}, loop, 100, [1.0] * 12,
                       {k: 0.001 for k in range(1, len(acceptance) + 1)}, plain_loop)


def speculative_round(branching, accepted, target=0.019, draft=0.002, verify=0.001, loop=0.003) -> RoundRecord:
    rows = 1 + sum(1 for _ in branching) if max(branching) == 1 else 1 + len(branching)
    return RoundRecord(tuple(branching), accepted + 1, target + draft + verify + loop, rows, target, draft, verify,
                       accepted)


def plain_round(target=0.016, loop=0.002) -> RoundRecord:
    return RoundRecord(PLAIN, 1, target + loop, 1, target)


def drive(policy: OnlineShapes, rounds: int, speculative, plain=plain_round) -> list[tuple[int, ...]]:
    """Run the policy for ``rounds`` rounds, answering each shape with ``speculative(shape)`` or ``plain()``."""
    shapes, emitted = [], 0
    for _ in range(rounds):
        shape = policy.next_shape(emitted, [0])
        record = speculative(shape) if shape else plain()
        policy.observe(record)
        shapes.append(shape)
        emitted += record.tokens
    return shapes


@pytest.mark.parametrize("verifier", ["resispec", "sps", "rrs"])
def test_greedy_under_changing_shapes_equals_greedy_decoding(tiny_models, verifier):
    target, draft = tiny_models
    prompt = torch.tensor([1, 4, 2])
    shapes = tuple(s for s in SHAPES if verifier != "sps" or max(s, default=1) == 1)
    reference = list(Decoder(target, None, "ar", sampling=Sampling(0.0)).generate(prompt, 32))
    policy = ContextShapes(shapes)
    decoder = Decoder(target, TreeLM(draft), verifier, (1,), Sampling(0.0), seed=3, shapes=policy)
    assert list(decoder.generate(prompt, 32)) == reference
    used = {record.branching for record in policy.seen}
    assert PLAIN in used and len(used) >= 3, used  # the shape did change mid-run
    assert sum(decoder.stats.shape_tokens.values()) >= 32


def test_a_self_draft_restarts_on_the_targets_cache_after_plain_tokens(tiny_models, monkeypatch):
    """A layer-skip draft (it shares the target's prompt cache) is re-started from the target's cache when a round
    follows plain tokens; greedy output is still greedy decoding's."""
    target, _ = tiny_models
    prompt = torch.tensor([1, 4, 2])
    draft = LayerSkipDraft(target, [1])
    starts = []
    original = draft.prefill_from
    monkeypatch.setattr(draft, "prefill_from", lambda other, ids: starts.append(len(ids)) or original(other, ids))
    reference = list(Decoder(target, None, "ar", sampling=Sampling(0.0)).generate(prompt, 40))
    decoder = Decoder(target, draft, "rrs", (1,), Sampling(0.0), seed=2, shapes=ContextShapes(((), (), (1, 1), (2,))))
    assert list(decoder.generate(prompt, 40)) == reference
    assert starts[0] == len(prompt) and len(starts) > 1 and all(n > len(prompt) for n in starts[1:])


def test_round_records_measure_each_round(tiny_models):
    target, draft = tiny_models
    policy = ContextShapes()
    decoder = Decoder(target, TreeLM(draft), "resispec", (1,), seed=1, shapes=policy)
    tokens = list(decoder.generate(torch.tensor([1, 4, 2]), 40))
    assert sum(record.tokens for record in policy.seen) >= len(tokens) == 40
    for record in policy.seen:
        assert record.seconds >= record.target_seconds + record.draft_seconds + record.verify_seconds > 0
        assert 0 <= record.accepted <= len(record.branching)
        assert record.target_rows == 1 if not record.branching else record.target_rows >= 2
        assert record.tokens == record.accepted + 1


def test_a_stale_calibration_that_chose_a_chain_gives_way_to_plain():
    """Calibrated when a plain token looked dear (t(1) 60 ms): the prior picks a chain; measured here, a chain's
    forward costs 1.5 plain ones and acceptance is 0.3: plain within the first rounds, said so."""
    stale = prior(acceptance=(0.6,), one_row=0.060, per_row=0.002)
    policy = OnlineShapes(stale)
    assert policy.prior.choose(plain=True).branching != PLAIN
    shapes = drive(policy, 40, lambda shape: speculative_round(shape, accepted=0, target=0.024))
    assert shapes[0] != PLAIN and shapes[-1] == PLAIN
    assert shapes.index(PLAIN) < 12
    assert any("plain" in change["reason"] or change["branching"] == [] for change in policy.changes)
    assert policy.changes[-1]["branching"] == [] or any(c["branching"] == [] for c in policy.changes)


def test_the_guard_goes_plain_when_measured_speculation_is_slower():
    """A model that learns nothing (its estimate stays the prior, which predicts speculation) and slow measured
    rounds: the guard alone goes plain, and says so."""
    policy = OnlineShapes(prior(acceptance=(0.9,), one_row=0.016, per_row=0.001))
    policy.estimate = lambda: policy.prior

    def slow(shape):
        record = speculative_round(shape, accepted=len(shape) - 1 if len(shape) > 1 else 0)
        return RoundRecord(record.branching, record.tokens, 0.2, record.target_rows, record.target_seconds,
                           record.draft_seconds, record.verify_seconds, record.accepted)

    drive(policy, 60, slow)
    reasons = [change["reason"] for change in policy.changes if change["branching"] == []]
    assert reasons and any(reason.startswith("guard") for reason in reasons), policy.changes


def test_plain_probes_speculation_again_and_takes_it_when_it_pays():
    """Plain from the start (the prior's acceptance is low); the text turns repetitive: a probe accepts every
    candidate, and the decoder speculates from then on."""
    policy = OnlineShapes(prior(acceptance=(0.1, 0.15, 0.2, 0.25)))
    assert policy.next_shape(0, [0]) == PLAIN
    shapes = [PLAIN] + drive(policy, 200, lambda shape: speculative_round(shape, accepted=len(shape), target=0.018))
    first_probe = next(i for i, shape in enumerate(shapes) if shape)
    assert first_probe <= FIRST_PROBE + 1
    assert sum(1 for shape in shapes[-40:] if shape) > 30  # speculating, with a plain check now and then
    assert any(change["reason"].startswith("probe") for change in policy.changes)


def test_probes_that_lose_come_further_apart():
    """Probes that lose but cost little extra (a round 5 ms above a plain token): the gap doubles."""
    policy = OnlineShapes(prior(acceptance=(0.05, 0.05, 0.05, 0.05)))
    shapes = drive(policy, 400, lambda shape: speculative_round(shape, accepted=0, target=0.017))
    starts = [i for i in range(1, len(shapes)) if shapes[i] and not shapes[i - 1]]
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert len(starts) >= 3 and gaps == sorted(gaps) and gaps[-1] > gaps[0]
    assert sum(1 for shape in shapes if shape) < 0.15 * len(shapes)


def test_a_dear_lost_probe_is_paid_for_by_a_longer_gap():
    """A lost probe whose first round (the draft's catch-up) costs 0.1 s: the next probe waits until that is
    ``PROBE_BUDGET`` of the plain tokens' time, not just twice the first gap."""
    policy = OnlineShapes(prior(acceptance=(0.05, 0.05, 0.05, 0.05)))
    rounds = []

    def dear_first_round(shape):
        first = not rounds or not rounds[-1]
        rounds.append(shape)
        return speculative_round(shape, accepted=0, target=0.017 + (0.1 if first else 0.0))

    shapes = drive(policy, 600, dear_first_round)
    starts = [i for i in range(1, len(shapes)) if shapes[i] and not shapes[i - 1]]
    plain_seconds = plain_round().seconds
    extra = 0.1 + 5 * (speculative_round((1,), 0, target=0.017).seconds - plain_seconds)
    paid = min(int(extra / (PROBE_BUDGET * plain_seconds)), LONGEST_GAP)
    assert starts[0] <= FIRST_PROBE + 1 and 2 * FIRST_PROBE < paid <= starts[1] - starts[0]
    assert sum(1 for shape in shapes if shape) < 0.05 * len(shapes)


def test_acceptance_follows_the_rejections():
    policy = OnlineShapes(prior())
    for _ in range(60):
        policy.observe(speculative_round((1, 1, 1), accepted=3))
    high = policy.acceptance()
    assert all(h > a for h, a in zip(high, policy.prior.acceptance)) and high[0] > 0.9
    for _ in range(120):
        policy.observe(speculative_round((1, 1, 1), accepted=0))
    low = policy.acceptance()
    assert all(lo < a for lo, a in zip(low, policy.prior.acceptance))


def test_target_costs_by_row_count_scale_the_prior_where_not_seen():
    policy = OnlineShapes(prior(one_row=0.010, per_row=0.001))
    for _ in range(20):
        policy.observe(RoundRecord((1,), 1, 0.05, 2, 0.025))
    assert policy.target_cost(2) == pytest.approx(0.025)
    assert policy.target_cost(1) == pytest.approx(0.010 * 0.025 / 0.011)
    assert "2 row(s)" in policy.far_off()
    assert OnlineShapes(prior()).far_off() is None


def test_the_decoder_reports_the_shapes_and_why(tiny_models):
    target, draft = tiny_models
    policy = OnlineShapes(prior(acceptance=(0.6, 0.7, 0.75, 0.8)))
    decoder = Decoder(target, TreeLM(draft), "resispec", (1,), seed=0, shapes=policy)
    list(decoder.generate(torch.tensor([1, 4, 2]), 48))
    assert decoder.stats.shapes and decoder.stats.shapes[0]["reason"].startswith("calibration")
    assert sum(decoder.stats.shape_tokens.values()) >= 48


def test_a_rebased_model_compares_with_the_refreshed_prior():
    policy = OnlineShapes(prior(one_row=0.010, per_row=0.001))
    for _ in range(10):
        policy.observe(RoundRecord((), 1, 0.05, 1, 0.04))
    assert policy.far_off() is not None
    policy.rebase(policy.refreshed())
    assert policy.far_off() is None and policy.target_cost(1) == pytest.approx(0.04)
    for _ in range(10):
        policy.observe(RoundRecord((), 1, 0.05, 1, 0.04))
    assert policy.far_off() is None  # the refreshed prior holds


def test_the_online_model_persists_per_configuration():
    import resispec.engine.decode.generation as generation

    made = prior()
    made.made = {"date": "2026-12-07T21:00:00+00:00"}
    first = generation.online_shapes("key", made, False)
    refreshed = prior(one_row=0.5)
    refreshed.made = {**made.made, "refreshed": "2026-12-07T22:00:00+00:00"}
    assert generation.online_shapes("key", refreshed, False) is first  # a refreshed calibration: the same
    assert generation.online_shapes("key", prior(), False) is not first  # another calibration (a test's fake)
    assert generation.online_shapes("key", made, True) is not first
    given = generation.online_shapes(None, prior(), False)
    assert generation.online_shapes(None, prior(), False) is given
    assert generation.online_shapes(None, prior(one_row=0.5), False) is not given  # a prior given: by content


def test_the_changes_of_shape_keep_both_ends_and_count_the_rest():
    changes = ShapeChanges(keep=3)
    for token in range(10):
        changes.append({"at_token": token, "branching": [], "reason": "r"})
    assert len(changes) == 10 and [c["index"] for c in changes] == [0, 1, 2, 7, 8, 9]
    assert changes[-1]["at_token"] == 9
    assert changes.since(0) == (list(changes), 4)
    kept, dropped = changes.since(5)  # a later generation: indices from its start, its own dropped ones
    assert [c["index"] for c in kept] == [2, 3, 4] and dropped == 2
    assert changes.since(10) == ([], 0)


def test_a_long_decode_holds_a_bounded_history_of_changes():
    """An alternating machine (speculation wins, then loses) changes shape again and again over 20,000 rounds;
    the policy keeps 2 KEPT_CHANGES of them and counts the others."""
    policy = OnlineShapes(prior(acceptance=(0.6,)))
    phase = {"n": 0}

    def speculative(shape):
        phase["n"] += 1
        return speculative_round(shape, accepted=len(shape) if phase["n"] // 40 % 2 else 0, target=0.024)

    drive(policy, 20000, speculative)
    assert len(policy.changes) > 2 * KEPT_CHANGES
    assert len(list(policy.changes)) == 2 * KEPT_CHANGES
    kept, dropped = policy.changes.since(0)
    assert len(kept) + dropped == len(policy.changes) and kept[0]["reason"].startswith("calibration")


def test_the_decoder_reports_the_changes_it_did_not_keep(tiny_models):
    target, draft = tiny_models
    policy = ContextShapes()
    policy.changes = ShapeChanges(keep=2)
    for token in range(7):  # changes before this generation: not this generation's
        policy.changes.append({"at_token": token, "branching": [], "reason": "earlier"})
    original = policy.next_shape

    def changing(emitted, context):
        shape = original(emitted, context)
        policy.changes.append({"at_token": emitted, "branching": list(shape), "reason": "context"})
        return shape

    policy.next_shape = changing
    decoder = Decoder(target, TreeLM(draft), "resispec", (1,), Sampling(0.0), seed=0, shapes=policy)
    list(decoder.generate(torch.tensor([1, 4, 2]), 20))
    rounds = len(policy.changes) - 7
    assert [c["index"] for c in decoder.stats.shapes] == [rounds - 2, rounds - 1]
    assert decoder.stats.shapes_dropped == rounds - 2
    assert all(c["reason"] == "context" for c in decoder.stats.shapes)
