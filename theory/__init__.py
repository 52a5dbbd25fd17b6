"""theory package (see README)."""
