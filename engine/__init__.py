"""engine package (see README)."""
