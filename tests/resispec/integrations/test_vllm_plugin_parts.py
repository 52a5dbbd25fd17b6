"""The vLLM plugin's parts that need no vLLM: settings, the scored rows and PITs, the expand fix against the
#55005 bug class (a toy shim written here), the layout of emitted tokens, the chain verifier's inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from resispec.audit.pit import randomized_pit  # noqa: E402
from resispec.integrations.vllm.config import load_config  # noqa: E402
from resispec.integrations.vllm.expand import expand_into  # noqa: E402
from resispec.integrations.vllm.hooks import emitted_rows  # noqa: E402
from resispec.integrations.vllm.rows import randomized_pits, request_processing, score  # noqa: E402
from resispec.integrations.vllm.target import check_claims  # noqa: E402
from resispec.integrations.vllm.verifier import chain_inputs  # noqa: E402
from resispec.processing import Processing, process_logits  # noqa: E402


def test_settings_from_variables_and_file(tmp_path):
    assert load_config({}).audit_dir is None and not load_config({}).fix_expand
    file = tmp_path / "plugin.json"
    file.write_text(json.dumps({"audit_dir": "/logs", "shard_tokens": 10, "verifier": "block"}))
    config = load_config({"RESISPEC_VLLM_CONFIG": str(file), "RESISPEC_VLLM_SHARD_TOKENS": "20",
                          "RESISPEC_VLLM_FIX_EXPAND": "1"})
    assert (str(config.audit_dir), config.shard_tokens, config.verifier, config.fix_expand) == ("/logs", 20,
                                                                                                 "block", True)


@pytest.mark.parametrize("environ, message", [
    ({"RESISPEC_VLLM_SHARD_TOKENS": "0"}, "RESISPEC_VLLM_SHARD_TOKENS: expected an integer >= 1"),
    ({"RESISPEC_VLLM_AUDIT_SEED": "x"}, "RESISPEC_VLLM_AUDIT_SEED: expected an integer"),
    ({"RESISPEC_VLLM_FIX_EXPAND": "maybe"}, "RESISPEC_VLLM_FIX_EXPAND: expected 1 or 0"),
    ({"RESISPEC_VLLM_VERIFIER": "bogus"}, "RESISPEC_VLLM_VERIFIER: expected one of vllm, block, sps"),
    ({"RESISPEC_VLLM_CONFIG": "/no/such/file.json"}, "RESISPEC_VLLM_CONFIG: cannot read"),
])
def test_bad_settings_name_the_variable(environ, message):
    with pytest.raises(ValueError, match=message):
        load_config(environ)


def test_vllm_conventions_map_onto_the_processing_law():
    assert request_processing(1e-6, 50, 0.5, 100) == Processing(0.0)  # below vLLM's epsilon: greedy
    assert request_processing(0.7, 100, 1.0, 100) == Processing(0.7)  # top-k = V and top-p = 1 are off
    assert request_processing(0.7, 5, 0.9, 100) == Processing(0.7, 5, 0.9)


def test_the_builtin_target_takes_temperature_top_k_top_p_claims_only():
    check_claims(Processing(0.7, 3, 0.9))
    with pytest.raises(ValueError, match="only temperature, top-k and top-p claims; got min_p, repetition_penalty"):
        check_claims(Processing(0.7, min_p=0.1, repetition_penalty=1.2))


def test_pits_are_the_cores_randomized_pit_row_by_row():
    rng = np.random.default_rng(0)
    logits = torch.from_numpy(rng.normal(size=(6, 50)) * 3)
    tokens, uniforms = torch.from_numpy(rng.integers(0, 50, 6)), torch.from_numpy(rng.random(6))
    processings = [Processing(1.0), Processing(0.5, 7), Processing(1.0, None, 0.8)] * 2
    pit, p = score(logits, tokens, uniforms, processings)
    for r, processing in enumerate(processings):
        row = process_logits(logits[r:r + 1], processing)[0].numpy()
        assert pit[r].item() == pytest.approx(randomized_pit(row, int(tokens[r]), float(uniforms[r])), abs=1e-12)
        assert p[r].item() == pytest.approx(row[int(tokens[r])], abs=1e-15)
    probs = torch.tensor([[0.0, 0.25, 0.75]], dtype=torch.float64)
    assert randomized_pits(probs, torch.tensor([0]), torch.tensor([0.5]))[1].item() == 0.0  # a p = 0 token shows


def int64_copy_shim(output, input_val, cu_num_tokens, replace_from, replace_to):
    """The bug class of vllm-project/vllm#55005, written here: the kernel runs on int64 copies of its tensors, so
    a float ``output`` is never written."""
    expand_into(output.to(torch.int64), input_val.to(torch.int64), cu_num_tokens, replace_from, replace_to)


def test_expand_writes_into_the_output_where_an_int64_copy_does_not():
    temperatures, cu = torch.tensor([0.5, 0.0, 1.5]), torch.tensor([2, 3, 6], dtype=torch.int32)
    fixed = torch.full((6,), float("nan"))
    expand_into(fixed, temperatures, cu, 0, 1)
    assert fixed.tolist() == [0.5, 0.5, 1.0, 1.5, 1.5, 1.5]  # greedy (0) replaced by 1, as vLLM asks
    buggy = torch.full((6,), float("nan"))
    int64_copy_shim(buggy, temperatures, cu, 0, 1)
    assert torch.isnan(buggy).all()  # the target rows would be divided by whatever was in memory
    ids = torch.empty(3, dtype=torch.int32)
    expand_into(ids, torch.tensor([7, 9], dtype=torch.int32), torch.tensor([1, 3]), 0, 0)
    assert ids.tolist() == [7, 9, 9]


def test_emitted_tokens_are_laid_out_by_kind_and_row():
    output = np.array([[5, 6, 9, -1, -1],   # 2 drafts accepted (5, 6), then the bonus token
                       [4, -1, -1, -1, -1],  # draft 0 rejected: 4 recovered
                       [8, -1, -1, -1, -1],  # no drafts: plain
                       [1, 2, -1, -1, -1]])  # discarded (a partial prefill)
    drafts = np.array([5, 6, 3, 7, 1])
    rows = emitted_rows(output, [2, 2, 0, 1], drafts, np.array([False, False, False, True]))
    assert rows == [(0, 0, 0, 5, "accepted"), (0, 1, 1, 6, "accepted"), (0, 2, 5, 9, "bonus"),
                    (1, 0, 2, 4, "recovered"), (2, 0, 7, 8, "plain")]
    plain = emitted_rows(np.array([[3], [4]]), None, None, np.zeros(2, dtype=bool))
    assert plain == [(0, 0, 0, 3, "plain"), (1, 0, 1, 4, "plain")]


def test_chain_inputs_process_each_request_and_one_hot_ngram_drafts():
    rng = np.random.default_rng(1)
    logits = torch.from_numpy(rng.normal(size=(3, 8)))
    processings = [Processing(0.5), Processing(1.0, 2)]
    p, q, drafted = chain_inputs([2, 1], torch.tensor([3, 4, 6]), None, logits, processings)
    assert p.shape == (2, 3, 8) and q.shape == (2, 2, 8) and drafted.tolist() == [[3, 4], [6, -1]]
    assert np.allclose(p[0, :2], process_logits(logits[:2], processings[0]).numpy())
    assert np.allclose(p[1, 0], process_logits(logits[2:], processings[1]).numpy()[0])
    assert q[0, 1, 4] == 1.0 and q[0, 1].sum() == 1.0 and q[1, 0, 6] == 1.0


def test_the_builtin_target_outside_vllms_environment_is_one_line_and_exit_2(capsys):
    import importlib.util

    from resispec.cli import main

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is importable here: the target runs (test_vllm_real.py)")
    assert main(["audit-sampler", "vllm:rejection"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "interpreter of vLLM's environment" in error
