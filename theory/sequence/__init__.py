"""Sequence-level verification: trees, whole rounds, block and traversal verification."""
