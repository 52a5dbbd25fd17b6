"""llama.cpp as the peer of ``resispec bench engine``: the same GGUF file, threads, prompts and sampling.

What a user who wants samples from this model would run: llama.cpp (through ``llama-cpp-python``, the
optional extra ``peer``; it builds from source, so ``.ci/install`` does not install it) on the target's own
GGUF file, with

- the same thread count (``n_threads`` and ``n_threads_batch``);
- the same prompt token ids: the engine's chat-formatted prompt (`resispec.engine.decode.generation.prompt_ids`)
  handed over as ids, so both models condition on the same tokens;
- **untruncated** sampling at temperature T: llama.cpp's defaults truncate (top-k 40, top-p 0.95, min-p
  0.05), so every filter is switched off (``UNTRUNCATED``: top-k 0, top-p 1, min-p 0, typical-p 1, no
  repetition, frequency or presence penalty): the law sampled is softmax(logits / T), as in the engine;
- a seed per prompt (the engine's ``seed + index``), the same number of new tokens, stopping after the
  end-of-sequence token as the engine does.

Two configurations: ``llama.cpp`` (plain sampling) and ``llama.cpp-lookup`` (its prompt-lookup draft,
``LlamaPromptLookupDecoding``: drafted tokens are kept while the token sampled from p at each position
equals them, so each token is still a sample of p). The time split: ``target_seconds`` is the wall time of
its ``eval`` calls (the model's forwards, one per call counted in ``target_forwards``), ``draft_seconds``
that of the lookup draft; the rest is its sampling and Python.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

LLAMA = "llama.cpp"
LLAMA_LOOKUP = "llama.cpp-lookup"
LLAMA_CONFIGURATIONS = {"plain": LLAMA, "lookup": LLAMA_LOOKUP}
"""``--llama-cpp`` choices -> row names."""
UNTRUNCATED = {"top_k": 0, "top_p": 1.0, "min_p": 0.0, "typical_p": 1.0, "repeat_penalty": 1.0,
               "frequency_penalty": 0.0, "presence_penalty": 0.0, "mirostat_mode": 0}
"""llama.cpp sampling options that leave softmax(logits / T) untouched (its defaults truncate)."""
CONTEXT = 4096
"""llama.cpp's context length: room for a held-out prompt and the new tokens."""


def llama_cpp_missing() -> str | None:
    """Why llama.cpp cannot run here (one line), or None when ``llama_cpp`` imports."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError as error:
        return f"llama_cpp does not import ({error}); install the extra: pip install 'resispec[peer]'"
    return None


class LlamaPeer:
    """llama.cpp on ``gguf_path`` with ``threads`` threads, plain or with its prompt-lookup draft."""

    def __init__(self, gguf_path: Path, threads: int, lookup: bool) -> None:
        from llama_cpp import Llama
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

        self.draft = _Timed(LlamaPromptLookupDecoding()) if lookup else None
        self.llm = Llama(model_path=str(gguf_path), n_threads=threads, n_threads_batch=threads, n_ctx=CONTEXT,
                         draft_model=self.draft, verbose=False)
        self.forward = _Timed(self.llm.eval)
        self.llm.eval = self.forward  # counts and times every forward (prompt, tokens, drafted tokens)

    def generate(self, prompt: Sequence[int], max_new_tokens: int, temperature: float, seed: int,
                 eos_id: int | None) -> tuple[list[int], dict[str, float]]:
        """Up to ``max_new_tokens`` tokens sampled after ``prompt`` (token ids), stopping after ``eos_id``, and
        the wall time: ``seconds``, ``target_seconds`` / ``target_forwards`` (evals), ``draft_seconds``."""
        for timed in (self.forward, self.draft):
            if timed is not None:
                timed.reset()
        self.llm.reset()
        self.llm.set_seed(seed)
        tokens: list[int] = []
        start = time.perf_counter()
        for token in self.llm.generate(list(prompt), temp=temperature, **UNTRUNCATED):
            tokens.append(int(token))
            if len(tokens) == max_new_tokens or token == eos_id:
                break
        seconds = time.perf_counter() - start
        return tokens, {"seconds": seconds, "target_seconds": self.forward.seconds,
                        "target_forwards": self.forward.calls,
                        "draft_seconds": self.draft.seconds if self.draft is not None else 0.0}


class _Timed:
    """A callable counting its calls and their wall time."""

    def __init__(self, function) -> None:
        self.function = function
        self.reset()

    def reset(self) -> None:
        self.calls, self.seconds = 0, 0.0

    def __call__(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return self.function(*args, **kwargs)
        finally:
            self.calls += 1
            self.seconds += time.perf_counter() - start


def make_llama_peers(gguf_path: Path | None, threads: int,
                     configurations: Sequence[str]) -> tuple[dict[str, LlamaPeer], str | None]:
    """The llama.cpp configurations asked for (keys of ``LLAMA_CONFIGURATIONS``) by row name, and None; or no
    configuration and why (one line) where llama.cpp cannot run: ``llama_cpp`` missing, or no GGUF file
    (``gguf_path`` None: a target given as a checkpoint folder)."""
    if not configurations:
        return {}, None
    why = llama_cpp_missing() or (None if gguf_path is not None else "the target is not a GGUF file")
    if why is not None:
        return {}, why
    return {LLAMA_CONFIGURATIONS[name]: LlamaPeer(gguf_path, threads, lookup=name == "lookup")
            for name in configurations}, None
