"""The model room: the target GGUF and its cached checkpoint, local checkpoints, quantized weights, tiny test models."""
