"""topk, verification of the draft's top-k tokens (docs/verifiers/topk.md)."""
