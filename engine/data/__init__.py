"""The engine's data room, below every other: the prompts (`resispec.engine.data.prompts`: the draft-training set,
whose train split also calibrates ``--tree auto``, and the held-out benchmark prompts) and the shipped decoding
log."""
