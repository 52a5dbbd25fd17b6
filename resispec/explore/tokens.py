"""Token ids of the SmolLM2 vocabulary as text, for the labels of a logged row.

The tokenizer is read from the engine's cached checkpoint of the target (written on the first
``resispec.engine.model.models.load_target``; nothing is fetched from a hub). Without the engine extra or the cache
the labels fall back to ``#id``.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _tokenizer():
    try:
        from transformers import AutoTokenizer

        from resispec.engine.model.gguf import checkpoint_dir, target_gguf_path

        folder = checkpoint_dir(target_gguf_path())
        if not (folder / "tokenizer_config.json").is_file():
            return None
        return AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except (ImportError, OSError, ValueError):
        return None


def decode_tokens(ids: list[int]) -> list[str]:
    """Each id decoded on its own (``repr``-style quotes keep spaces visible), or ``#id`` without a tokenizer."""
    tokenizer = _tokenizer()
    if tokenizer is None:
        return [f"#{token}" for token in ids]
    return [repr(tokenizer.decode([token])) for token in ids]
