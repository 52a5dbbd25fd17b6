"""The decoding room: the speculative loop, a generation request, sampling processing, tree expansion, tree choice."""
