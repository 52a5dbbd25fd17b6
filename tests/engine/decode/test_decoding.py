"""The decoding loop: greedy equals autoregressive greedy, processing, audits, the CLI end to end."""

from __future__ import annotations

import json

import pytest
import torch

from resispec import VERIFIERS, get_verifier
from resispec.audit import pit_audit
from resispec.cli import main
from resispec.engine.decode.decoding import Decoder
from resispec.engine.decode.processing import Sampling, draft_probs, target_probs
from resispec.engine.runtime.tree_lm import TreeLM
from resispec.engine.verifiers.node_verification import NodeVerifier

EXACT = [name for name, cls in VERIFIERS.items() if cls.claims_exact]  # the engine decodes with every rule


def _branching(verifier: str) -> tuple[int, ...]:
    return (1, 1, 1) if VERIFIERS[verifier].max_k == 1 else (3, 2, 1)


@pytest.mark.parametrize("verifier", EXACT)
def test_greedy_speculative_output_equals_greedy_decoding(tiny_models, verifier):
    target, draft = tiny_models
    prompt = torch.tensor([1, 4, 2])
    reference = list(Decoder(target, None, "ar", sampling=Sampling(0.0)).generate(prompt, 24))
    decoder = Decoder(target, TreeLM(draft), verifier, _branching(verifier), Sampling(0.0), seed=3)
    assert list(decoder.generate(prompt, 24)) == reference
    assert decoder.stats.target_forwards <= 24


def test_the_chain_part_of_a_tree_is_decided_in_one_batched_sps_call(tiny_models, monkeypatch):
    target, draft = tiny_models
    decoder = Decoder(target, TreeLM(draft), "resispec", (1, 1, 3), seed=2)
    assert decoder.chain_length == 2
    batches, single_nodes = [], []
    batched, single = decoder.chain_verifier.verify_batch, decoder.node_verifier.verify
    monkeypatch.setattr(decoder.chain_verifier, "verify_batch",
                        lambda p, q, c, rng: batches.append(len(c)) or batched(p, q, c, rng))
    monkeypatch.setattr(decoder.node_verifier, "verify",
                        lambda p, q, c, rng: single_nodes.append(len(c)) or single(p, q, c, rng))
    list(decoder.generate(torch.tensor([1, 4, 2]), 12))
    assert batches and set(batches) == {2}  # nodes 0 and 1, one call per round
    assert set(single_nodes) <= {3}  # only the three-candidate node goes through resispec
    assert Decoder(target, TreeLM(draft), "resispec", (2, 1)).chain_verifier is None  # no leading chain


def test_the_loop_trusts_its_own_rows_and_the_boundary_still_refuses_bad_ones(tiny_models, monkeypatch):
    """Rows the loop made itself are not revalidated at every node (the trusted path); rows from outside are."""
    from resispec.engine.verifiers import base, validation

    target, draft = tiny_models
    checked = []
    for module in (base, validation):
        original = module.as_distributions
        monkeypatch.setattr(module, "as_distributions",
                            lambda values, name, original=original: checked.append(name) or original(values, name))
    decoder = Decoder(target, TreeLM(draft), "resispec", (2, 2, 1), seed=5)
    assert len(list(decoder.generate(torch.tensor([1, 4, 2]), 16))) == 16
    assert checked == []
    p = target_probs(torch.randn(1, 8), Sampling())
    bad = p.clone()
    bad[0, 3] = float("nan")
    candidates = decoder.node_verifier.draft(p, 2, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="p \\(target\\)"):
        decoder.node_verifier.verifier.verify(bad, p, candidates, torch.rand(1, 3, dtype=torch.float64))
    assert checked == ["p (target)"]


def test_processing_applies_the_same_transform_to_p_and_q():
    logits = torch.tensor([[2.0, 1.0, 0.5, -1.0, -3.0]])
    plain = torch.softmax(logits.double(), dim=-1)
    assert torch.allclose(target_probs(logits, Sampling(1.0)), plain)
    top2 = target_probs(logits, Sampling(1.0, top_k=2))
    assert torch.count_nonzero(top2) == 2 and torch.allclose(top2, draft_probs(logits, Sampling(1.0, top_k=2)))
    nucleus = target_probs(logits, Sampling(1.0, top_p=0.7))
    kept = plain[0, :2].sum()
    assert kept >= 0.7 and torch.count_nonzero(nucleus) == 2
    assert torch.allclose(nucleus[0, :2], plain[0, :2] / kept)
    hot = target_probs(logits / 0.5, Sampling(0.0))
    assert hot.tolist() == [[1.0, 0.0, 0.0, 0.0, 0.0]]
    assert torch.allclose(draft_probs(logits, Sampling(0.0)), plain)
    cold = target_probs(logits, Sampling(0.5))
    assert torch.allclose(cold, torch.softmax(logits.double() / 0.5, dim=-1))
    for bad in (dict(temperature=-1.0), dict(top_k=0), dict(top_p=0.0), dict(top_p=1.5)):
        with pytest.raises(ValueError):
            Sampling(**bad)


def test_top_k_trees_with_wor_drafting_pad_thin_nodes(tiny_models):
    """With top-k = 2 the draft has 2 tokens per node, fewer than the 3 WOR children asked for."""
    target, draft = tiny_models
    decoder = Decoder(target, TreeLM(draft), "rrs_wor", (3, 2), Sampling(1.0, top_k=2), seed=0, audit=True)
    tokens = list(decoder.generate(torch.tensor([1, 2]), 30))
    assert len(tokens) == 30 and len(decoder.stats.pit) == 30


def test_pit_values_of_an_exact_verifier_are_uniform(tiny_models):
    target, draft = tiny_models
    decoder = Decoder(target, TreeLM(draft), "resispec", (3, 2), Sampling(1.0), seed=4, audit=True)
    list(decoder.generate(torch.tensor([5]), 600))
    assert pit_audit(decoder.stats.pit).passed
    rates = decoder.stats.acceptance_by_depth
    assert len(rates) >= 1 and all(0.0 <= r <= 1.0 for r in rates)


def test_decoder_rejects_bad_configuration(tiny_models):
    target, draft = tiny_models
    with pytest.raises(ValueError, match="at most 1"):
        Decoder(target, TreeLM(draft), "sps", (2, 1))
    with pytest.raises(ValueError, match="draft"):
        Decoder(target, None, "rrs")
    with pytest.raises(ValueError, match="unknown verifier"):
        Decoder(target, TreeLM(draft), "nope")
    with pytest.raises(ValueError, match="max_new_tokens"):
        list(Decoder(target, None, "ar").generate(torch.tensor([1]), 0))


@pytest.mark.real_model
def test_generate_cli_json_on_the_real_model(real_target, capsys):
    status = main(["generate", "--prompt", "Say hello.", "--max-new-tokens", "6", "--tree", "2,1",
                   "--verifier", "resispec", "--audit", "--parity", "1", "--json", "--threads", "1"])
    record = json.loads(capsys.readouterr().out)
    assert status == 0 and record["tokens"] == 6 and record["target_forwards"] >= 1
    assert record["accepted_per_forward"] >= 1.0
    assert record["audit"]["verdict"] == "UNTESTED" and not record["audit"]["passed"]  # 6 tokens test nothing
    assert record["parity"]["checked"] >= 1 and record["parity"]["mismatches"] == 0


@pytest.mark.real_model
def test_greedy_on_the_real_model_equals_autoregressive(real_target, capsys):
    outputs = {}
    for verifier, tree in (("ar", "1"), ("rrs_wor", "2,1"), ("resispec", "1,1,1,1,1")):
        main(["generate", "--prompt", "Name a color.", "--max-new-tokens", "12", "--tree", tree,
              "--verifier", verifier, "--temperature", "0", "--json", "--threads", "1"])
        outputs[verifier] = json.loads(capsys.readouterr().out)["text"]
    assert outputs["ar"] == outputs["rrs_wor"] == outputs["resispec"]


@pytest.mark.real_model
def test_generate_defaults_calibrate_and_decode_the_faster_of_a_tree_and_plain_decoding(real_target, capsys, tmp_path,
                                                                                       monkeypatch):
    import resispec.engine.decode.calibration

    monkeypatch.setattr(resispec.engine.decode.calibration, "cache_root", lambda: tmp_path)  # a fresh calibration
    # a prompt whose answer outlasts 16 tokens (a short answer can end at EOS first, whatever the seed)
    argv = ["generate", "--prompt", "Write a long poem about the sea.", "--max-new-tokens", "16", "--audit", "--json",
            "--threads", "1"]
    assert main(argv) == 0
    first = capsys.readouterr()
    assert "resispec: calibrating --tree auto" in first.err  # a first run says what it builds (about a minute)
    record = json.loads(first.out)
    assert record["target_compute"] == "native"  # the fastest exact computation on this CPU (float32 dtype, GGUF)
    tree = record["tree"]
    assert tree["auto"] and not tree["calibration_cached"] and record["tokens"] == 16
    assert tree["online"] and tree["shapes"][0]["reason"].startswith("calibration: ")  # decided as it decodes
    assert sum(tree["shape_tokens"].values()) >= 16
    made = tree["calibration"]  # what the calibration is: when, at what load, where
    assert {"date", "load", "cpu", "torch", "capability", "threads"} <= set(made) and made["threads"] == 1
    assert made["date"] in made["summary"] and made["torch"] in made["summary"]
    assert 0.6 < tree["acceptance"][0] <= 1  # the layer-skip draft of the native target: sum min(p, q) at T = 1
    best = tree["best_tree"]
    assert best["branching"] and best["predicted_tokens_per_forward"] > 1  # a tree accepts; whether it pays:
    if tree["plain"]:  # no tree predicted faster: the loop samples from p itself, one token per forward
        assert tree["branching"] == [] and tree["predicted_tokens_per_second"] >= best["predicted_tokens_per_second"]
        assert record["accepted_per_forward"] == 1.0 and record["target_forwards"] == 16
        assert record["seconds"]["draft"] == 0 and record["acceptance_by_depth"] == []
    else:
        assert tree["branching"] == best["branching"] and record["accepted_per_forward"] > 1
        assert record["seconds"]["draft"] > 0
    assert record["seconds"]["target_forward"] > 0 and record["seconds"]["verification"] > 0
    assert main(argv) == 0
    second = capsys.readouterr()
    assert json.loads(second.out)["tree"]["calibration_cached"] and "calibrating" not in second.err


@pytest.mark.real_model
def test_an_auto_choice_of_plain_decoding_decodes_what_ar_decodes(real_target, monkeypatch):
    import resispec.engine.decode.generation as generation
    from resispec.engine.decode.calibration import Calibration
    from resispec.engine.decode.tree_search import TreeChoice

    model, tokenizer = real_target
    calibration = Calibration([0.9, 0.95], {1: 0.04, 32: 0.05}, {1: 0.04, 16: 0.04}, 0.001, 8, [1.0] * 12,
                              {1: 0.001, 2: 0.001}, 0.001)
    monkeypatch.setattr(generation, "choose_tree", lambda *args: (calibration.choose(), calibration, True))
    # a draft as dear as the target
    auto = generation.GenerationRequest(prompt="Name a color.", max_new_tokens=8, seed=4, audit=True, threads=1)
    plain = generation.GenerationRequest(prompt="Name a color.", verifier="ar", max_new_tokens=8, seed=4, threads=1)
    tokens, stats = generation.generate(model, tokenizer, auto)
    assert stats.tree["plain"] and stats.tree["branching"] == [] and stats.tree["best_tree"]["branching"]
    assert calibration.choose(plain=True) == TreeChoice((), 1.0, 0.041)
    assert tokens == generation.generate(model, tokenizer, plain)[0]  # the same law, the same tokens for the seed
    assert stats.target_forwards == len(tokens) and len(stats.pit) == len(tokens)  # audited, token by token
    for log, parity in ((generation.node_log_for(model, auto, 16), 0.0), (None, 1.0)):  # they ask for nodes
        hooked = generation.GenerationRequest(prompt="Name a color.", max_new_tokens=8, seed=4, threads=1,
                                              parity_fraction=parity)
        _, stats = generation.generate(model, tokenizer, hooked, log=log)
        assert not stats.tree["plain"] and stats.tree["branching"] == stats.tree["best_tree"]["branching"]
        assert (len(log.rows) if log is not None else stats.parity_checked) > 0


@pytest.mark.parametrize("verifier", ["resispec", "rrs_wor", "spectr", "resispec_wor"])
def test_parity_check_of_torch_against_numpy_during_decoding(tiny_models, verifier):
    target, draft = tiny_models
    decoder = Decoder(target, TreeLM(draft), verifier, (3, 2), Sampling(1.0), seed=6, parity_fraction=1.0)
    list(decoder.generate(torch.tensor([2, 5]), 40))
    assert decoder.stats.parity_checked >= 20 and decoder.stats.parity_mismatches == 0
    with pytest.raises(ValueError, match="parity_fraction"):
        Decoder(target, TreeLM(draft), verifier, (2,), parity_fraction=1.5)
    with pytest.raises(ValueError, match="parity_rng: a parity check needs its own generator"):
        NodeVerifier(get_verifier(verifier), parity_fraction=0.5)


def test_node_log_round_trips_through_the_simulator_format(tiny_models, tmp_path):
    from resispec.engine.logs.node_log import NodeLog
    from resispec.formats.pairs import read_logged

    target, draft = tiny_models
    log = NodeLog(vocab_size=8, keep=5, metadata={"model": "tiny", "temperature": 1.0})
    decoder = Decoder(target, TreeLM(draft), "rrs_wor", (3, 2), Sampling(1.0), seed=2, log=log)
    for _ in range(2):
        list(decoder.generate(torch.tensor([1, 3]), 7))
    rows = log.write(tmp_path / "nodes.npz")
    logged = read_logged(tmp_path / "nodes.npz")
    assert len(logged) == rows >= 4 and set(logged.ids["chain"].tolist()) == {0, 1}
    assert logged.ids["position"].max() < 7
    emitted, index, candidates = (logged.decisions[name] for name in ("emitted", "accepted_index", "candidates"))
    accepted = index >= 0
    assert (candidates[accepted, index[accepted]] == emitted[accepted]).all()
    assert logged.tailed()[0].shape == (rows, 6)  # 5 kept ids + the tail bucket
    assert logged.tailed(tail="split")[0].shape == (rows, 7)  # 5 kept ids + a tail bucket each


@pytest.mark.parametrize("verifier", ["resispec", "ar"])
def test_audit_hooks_never_change_the_decoded_tokens(tiny_models, verifier):
    """PIT and parity uniforms come from their own stream: the same seed decodes the same tokens
    with every hook off or on."""
    from resispec.engine.logs.node_log import NodeLog

    target, draft = tiny_models
    prompt, branching = torch.tensor([3, 1]), (3, 2)
    plain = list(Decoder(target, TreeLM(draft), verifier, branching, Sampling(1.0), seed=4).generate(prompt, 40))
    hooked = Decoder(target, TreeLM(draft), verifier, branching, Sampling(1.0), seed=4, audit=True,
                     parity_fraction=0.0 if verifier == "ar" else 0.5,
                     log=None if verifier == "ar" else NodeLog(vocab_size=8, keep=5))
    assert list(hooked.generate(prompt, 40)) == plain
    assert len(hooked.stats.pit) == len(plain)
    if verifier != "ar":
        assert hooked.stats.parity_checked > 0
