"""pooled_wor: the set-level WOR verifier's selection laws."""
