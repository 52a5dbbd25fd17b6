"""spectr, SpecTr's k-SEQ (docs/verifiers/spectr.md)."""
