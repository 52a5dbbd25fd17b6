"""The runtime room: the LM forwards the decoder runs (CompactLM, TreeLM, kv cache, small rows, the tree)."""
