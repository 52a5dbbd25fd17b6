"""A checkpoint folder's tokenizer without transformers: the `tokenizers` library and the chat template in jinja2.

What the engine asks of a tokenizer while it decodes (`resispec.engine.decode.generation`: the chat template, encode,
decode, the end-of-sequence id; `resispec.engine.decode.calibration`'s prompts), read from the files transformers
writes (``tokenizer.json``, ``tokenizer_config.json``, ``chat_template.jinja`` or the config's
``chat_template``), with transformers' tokenizer's meaning:

- ``encode(text)``: ``tokenizer.json``'s pipeline with its post-processor (``add_special_tokens``);
- ``decode(ids, skip_special_tokens)``: its decoder; no clean-up of spaces (transformers' default; a config
  asking for one, or for bos / eos tokens beyond the post-processor's, is refused: `tokenizer_problem`);
- ``apply_chat_template(conversation, add_generation_prompt, tokenize)``: the template rendered in a sandboxed
  jinja2 environment with ``trim_blocks`` and ``lstrip_blocks``, the loop-control extension, ``raise_exception``
  and a ``tojson`` that does not escape HTML, given the messages, ``add_generation_prompt``,
  ``tools = documents = None`` and the special tokens (``bos_token``, ``eos_token``, ...) as variables, as
  transformers renders chat templates; the text, or its ids encoded without special tokens (the template
  writes them).

Tests pin the ids and texts equal to transformers' tokenizer on the real checkpoint over the bench prompts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from jinja2 import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import Tokenizer

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
TEMPLATE_FILE = "chat_template.jinja"
SPECIAL_TOKENS = ("bos_token", "eos_token", "unk_token", "pad_token")


def tokenizer_problem(folder: Path) -> str | None:
    """Why `ChatTokenizer` cannot stand for ``folder``'s transformers tokenizer (None: it can)."""
    if not (folder / TOKENIZER_FILE).is_file() or not (folder / TOKENIZER_CONFIG).is_file():
        return f"no {TOKENIZER_FILE} and {TOKENIZER_CONFIG}"
    config = json.loads((folder / TOKENIZER_CONFIG).read_text())
    if config.get("clean_up_tokenization_spaces"):
        return "it asks for clean_up_tokenization_spaces"
    if config.get("add_bos_token") or config.get("add_eos_token"):
        return "it adds bos / eos tokens on top of tokenizer.json's post-processor"
    if config.get("backend", "tokenizers") != "tokenizers":
        return f"backend {config.get('backend')!r}"
    return None


def _raise_exception(message: str) -> None:
    raise TemplateError(message)


def _tojson(value, ensure_ascii: bool = False, indent=None, separators=None, sort_keys: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


class ChatTokenizer:
    """The tokenizer of the checkpoint ``folder`` (module docstring); ValueError naming the folder where
    `tokenizer_problem` refuses it."""

    def __init__(self, folder: str | Path) -> None:
        folder = Path(folder)
        problem = tokenizer_problem(folder)
        if problem is not None:
            raise ValueError(f"{folder}: its tokenizer needs transformers ({problem})")
        self.backend = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        config = json.loads((folder / TOKENIZER_CONFIG).read_text())
        self.special_tokens = {}
        for name in SPECIAL_TOKENS:
            token = config.get(name)
            if isinstance(token, dict):
                token = token.get("content")
            if isinstance(token, str):
                self.special_tokens[name] = token
        eos = self.special_tokens.get("eos_token")
        self.eos_token_id = None if eos is None else self.backend.token_to_id(eos)
        template_file = folder / TEMPLATE_FILE
        source = template_file.read_text() if template_file.is_file() else config.get("chat_template")
        self.chat_template = None
        if isinstance(source, str):
            environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
            environment.filters["tojson"] = _tojson
            environment.globals["raise_exception"] = _raise_exception
            self.chat_template = environment.from_string(source)
        self.folder = folder

    def __len__(self) -> int:
        """The number of tokens, added ones included."""
        return self.backend.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return self.backend.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        return self.backend.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def apply_chat_template(self, conversation: list[dict], add_generation_prompt: bool = False, tokenize: bool = True,
                            return_dict: bool = False) -> str | list[int]:
        """The conversation (``[{"role": ..., "content": ...}, ...]``) in the chat template: its text, or with
        ``tokenize`` its ids (no special tokens added). ``return_dict`` must be False (only the ids are kept)."""
        if self.chat_template is None:
            raise ValueError(f"{self.folder}: the tokenizer has no chat template (use the raw prompt)")
        if return_dict:
            raise ValueError("apply_chat_template: return_dict=True is not kept here; the ids are returned")
        text = self.chat_template.render(messages=conversation, tools=None, documents=None,
                                         add_generation_prompt=add_generation_prompt, **self.special_tokens)
        return self.encode(text, add_special_tokens=False) if tokenize else text
