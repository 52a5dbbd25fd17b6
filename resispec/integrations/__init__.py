"""Adapters that run inside other engines' processes (an interface layer, beside ``resispec.cli``): they import
the engine (never the core), and the core's formats and audits. ``vllm``: the vLLM plugin (docs/vllm.md)."""
