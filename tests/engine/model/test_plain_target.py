"""The transformers-free target (`PlainLlama`, `ChatTokenizer`): the same weights, rotary bits, token ids and
decoded tokens as transformers' model and tokenizer, and a warm `resispec generate` that never imports transformers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from jinja2 import TemplateError
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

from resispec.engine.decode.calibration import calibration_key
from resispec.engine.decode.decoding import Decoder
from resispec.engine.decode.generation import GenerationRequest, generate, prompt_ids
from resispec.engine.decode.processing import Sampling
from resispec.engine.drafts.registry import reads_only_target_weights
from resispec.engine.model import gguf
from resispec.engine.model.chat_tokenizer import ChatTokenizer, tokenizer_problem
from resispec.engine.model.models import load_target, with_compute
from resispec.engine.model.plain_llama import PlainLlama, PlainRotary, plain_problem
from resispec.engine.model.row_kernels import load_row_kernels
from resispec.engine.model.tiny import tiny_llama
from resispec.engine.runtime.tree_lm import TreeLM
from tests.engine.model.test_checkpoints import word_tokenizer
from tests.engine.model.test_models import requires_target_wheel

REPO = Path(__file__).resolve().parents[3]
LLAMA = {"model_type": "llama", "hidden_act": "silu", "rope_parameters": {"rope_type": "default", "rope_theta": 1e4}}


@pytest.fixture(scope="module")
def saved_tiny(tmp_path_factory):
    """(transformers' tiny Llama as loaded from the folder it was saved to, that folder)."""
    folder = tmp_path_factory.mktemp("tiny")
    tiny_llama(seed=3, vocab_size=16).save_pretrained(folder)
    return AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.float32).eval(), folder


def test_plain_llama_holds_the_weights_and_module_names_transformers_holds(saved_tiny):
    model, folder = saved_tiny
    plain = PlainLlama.load(folder)
    theirs, ours = dict(model.named_parameters()), dict(plain.named_parameters())
    assert sorted(theirs) == sorted(ours) and all(torch.equal(theirs[name], ours[name]) for name in theirs)
    linears = [[name for name, m in net.named_modules() if isinstance(m, torch.nn.Linear)] for net in (model, plain)]
    assert linears[0] == linears[1]
    assert plain.config._name_or_path == plain.name_or_path == str(folder) == model.name_or_path
    assert (plain.dtype, plain.device, plain.training) == (torch.float32, torch.device("cpu"), False)
    norm = plain.model.layers[1].post_attention_layernorm
    assert norm.variance_epsilon == model.model.layers[1].post_attention_layernorm.variance_epsilon


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("theta", [1e4, 1e5])
def test_plain_rotary_gives_transformers_bits(dtype, theta):
    config = LlamaConfig(hidden_size=576, num_attention_heads=9, head_dim=64,  # the real target's shape
                         rope_parameters={"rope_type": "default", "rope_theta": theta})
    modules = [LlamaRotaryEmbedding(config).to(dtype), PlainRotary(64, theta).to(dtype)]  # a bfloat16 draft casts
    x, positions = torch.zeros(1, 3, dtype=dtype), torch.arange(0, 9000)[None]
    (cos_a, sin_a), (cos_b, sin_b) = (module(x, positions) for module in modules)
    assert cos_a.dtype == dtype and torch.equal(cos_a, cos_b) and torch.equal(sin_a, sin_b)


CHAT_TEMPLATE = """{%- for message in messages %}
  {% if message['role'] == 'system' %}{{ raise_exception('no system turn') }}{% endif %}
  <{{ message['role'] }}>{{ message['content'] | tojson }}{{ eos_token }}
{% endfor %}
{% if add_generation_prompt %}
<assistant>{% endif %}"""


def test_chat_tokenizer_renders_a_template_as_transformers_does(tmp_path):
    tokenizer = word_tokenizer(8)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(tmp_path)
    hf, plain = AutoTokenizer.from_pretrained(tmp_path, local_files_only=True), ChatTokenizer(tmp_path)
    messages = [{"role": "user", "content": 't3 "<b>" ü'}, {"role": "assistant", "content": "t5"}]
    for prompt in (True, False):
        text = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=prompt)
        assert plain.apply_chat_template(messages, tokenize=False, add_generation_prompt=prompt) == text
    with pytest.raises(TemplateError, match="no system turn"):
        plain.apply_chat_template([{"role": "system", "content": "t1"}])
    assert plain.encode("t3 t1 t7") == hf.encode("t3 t1 t7") == [3, 1, 7] and plain.eos_token_id == 1


def test_a_plain_target_decodes_the_tokens_of_transformers_model(saved_tiny):
    model, folder = saved_tiny
    draft = TreeLM(tiny_llama(seed=4, vocab_size=16, num_layers=1))
    tokens = [list(Decoder(target, draft, "resispec", (2, 1), Sampling(1.0), seed=5).generate(torch.tensor([1, 3]), 20))
              for target in (model, PlainLlama.load(folder))]
    assert tokens[0] == tokens[1]


def test_plain_llama_names_a_tensor_missing_or_left_over(saved_tiny, tmp_path):
    _, folder = saved_tiny
    tensors = load_file(folder / "model.safetensors")
    (tmp_path / "config.json").write_text((folder / "config.json").read_text())
    extra = {**tensors, "model.layers.0.self_attn.q_proj.bias": torch.zeros(16)}
    save_file(extra, tmp_path / "model.safetensors")
    with pytest.raises(ValueError, match="no place for .*q_proj.bias"):
        PlainLlama.load(tmp_path)
    save_file({k: v for k, v in tensors.items() if k != "model.norm.weight"}, tmp_path / "model.safetensors")
    with pytest.raises(ValueError, match="has no tensor model.norm.weight"):
        PlainLlama.load(tmp_path)


@pytest.mark.parametrize(("change", "named"), [
    ({"model_type": "mistral"}, "model_type is not llama"), ({"hidden_act": "gelu"}, "hidden_act is not silu"),
    ({"mlp_bias": True}, "biased projections"), ({"sliding_window": 4096}, "a sliding window"),
    ({"rope_parameters": {"rope_type": "llama3", "rope_theta": 5e5}}, "rotary embedding other than the default"),
    ({"rope_parameters": None, "rope_scaling": {"type": "linear"}}, "rotary embedding other than the default"),
    ({"partial_rotary_factor": 0.5}, "partial rotary embedding"),
])
def test_plain_problem_names_what_plain_llama_does_not_reproduce(change, named, tmp_path):
    assert plain_problem(LLAMA) is None
    assert plain_problem({**LLAMA, **change}) == named
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA, **change}))
    with pytest.raises(ValueError, match=f"{tmp_path}: not a model PlainLlama holds .{named}"):
        PlainLlama.load(tmp_path)


def test_chat_tokenizer_refuses_what_it_does_not_reproduce(tmp_path):
    assert tokenizer_problem(tmp_path) == "no tokenizer.json and tokenizer_config.json"
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"clean_up_tokenization_spaces": True}))
    with pytest.raises(ValueError, match="needs transformers .it asks for clean_up_tokenization_spaces"):
        ChatTokenizer(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"add_bos_token": True}))
    assert tokenizer_problem(tmp_path) == "it adds bos / eos tokens on top of tokenizer.json's post-processor"


@pytest.mark.parametrize(("name", "plain"), [("default", True), ("int4", True), ("bf16", True), ("ngram-3", True),
                                             ("layer-skip:0,2", True), ("trained", False), ("early-exit-4", False)])
def test_only_drafts_reading_the_target_weights_take_a_plain_target(name, plain):
    assert reads_only_target_weights(name) is plain


# The real target, warm (the caches are built by the first of these tests on a cold machine).

BENCH_PROMPTS = json.loads((REPO / "engine" / "data" / "bench_prompts.json").read_text())
ODD_PROMPTS = ["  two  spaces, a tab\tand a newline\n", "<|im_end|> a special token's text, ünïcödé, 数字 123",
               "{{ not a template }} {% raw %}"]


@pytest.fixture(scope="module")
def real_tokenizers():
    folder = gguf.ensure_checkpoint(gguf.target_gguf_path())
    return AutoTokenizer.from_pretrained(folder, local_files_only=True), ChatTokenizer(folder)


@pytest.mark.real_model
@requires_target_wheel
@pytest.mark.parametrize("prompt", BENCH_PROMPTS + ODD_PROMPTS)
def test_chat_tokenizer_gives_the_ids_and_text_of_transformers_tokenizer(real_tokenizers, prompt):
    hf, plain = real_tokenizers
    messages = [{"role": "user", "content": prompt}]
    text = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    todays = hf(text, return_tensors="pt").input_ids[0]  # what generate encoded before (prompt_ids)
    assert plain.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) == text
    assert torch.equal(prompt_ids(plain, prompt, True), todays) and torch.equal(prompt_ids(hf, prompt, True), todays)
    assert torch.equal(prompt_ids(plain, prompt, chat=False), hf(prompt, return_tensors="pt").input_ids[0])
    assert plain.apply_chat_template(messages, add_generation_prompt=True) == hf.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=True, return_dict=False)  # the calibration prompts
    ids = todays.tolist()
    for skip in (True, False):
        assert plain.decode(ids, skip_special_tokens=skip) == hf.decode(ids, skip_special_tokens=skip)
    assert (plain.eos_token_id, len(plain)) == (hf.eos_token_id, len(hf))


@pytest.mark.real_model
@requires_target_wheel
@pytest.mark.parametrize("compute", ["float32", "native"])
@pytest.mark.parametrize("verifier", ["ar", "resispec"])
def test_a_transformers_free_target_decodes_todays_tokens(real_target, compute, verifier):
    hf_model, hf_tokenizer = real_target
    hf_model = with_compute(hf_model, compute)
    model, tokenizer = load_target(compute=compute, transformers_free=True)
    assert isinstance(model, PlainLlama) and isinstance(tokenizer, ChatTokenizer)
    request = GenerationRequest(prompt="Explain why bread dough rises.", verifier=verifier, branching=(2, 1),
                                max_new_tokens=8, seed=11, threads=1)
    ours, _ = generate(model, tokenizer, request)
    todays, _ = generate(hf_model, hf_tokenizer, request)
    assert ours == todays and len(ours) == 8
    sampling = Sampling(1.0)  # the same key: a warm start finds the calibration today's path cached
    assert calibration_key(model, "int4", "resispec", sampling, 1) == calibration_key(hf_model, "int4", "resispec",
                                                                                       sampling, 1)


HEAVY = ("transformers", "scipy", "numba", "sympy", "matplotlib")
"""What a warm ``generate`` never imports: transformers (the plain target needs none), and what would only add
to its start-up (SciPy alone took 0.4-1.0 s to import; numba ~0.7 s with what it imports: the native forward's
kernels load compiled, `resispec.engine.model.row_kernels`)."""

WARM_GENERATE = f"HEAVY = {HEAVY!r}\n" + """
import sys
from resispec.cli import main
for options in ([], ["--verifier", "ar"], ["--target-compute", "native"], ["--verifier", "ar", "--target-compute",
                                                                              "native"]):
    assert main(["generate", "--prompt", "Hi.", "--max-new-tokens", "2", "--tree", "1,1", "--threads", "1",
                 "--json", *options]) == 0
print(sorted({name.split(".")[0] for name in sys.modules} & set(HEAVY)))
"""


@pytest.mark.real_model
@requires_target_wheel
def test_a_warm_generate_imports_no_transformers_and_nothing_that_only_slows_its_start():
    for compute in ("float32", "native"):  # warm every cache the command reads (built here, with transformers)
        generate(*load_target(compute=compute, transformers_free=True),
                 GenerationRequest(prompt="Hi.", branching=(1, 1), max_new_tokens=1, threads=1))
    load_row_kernels(gguf.cache_root() / "kernels")  # this process may hold kernels built in another test's cache
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    run = subprocess.run([sys.executable, "-c", WARM_GENERATE], cwd=REPO, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": path}, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines()[-1] == "[]", run.stdout.splitlines()[-1]
