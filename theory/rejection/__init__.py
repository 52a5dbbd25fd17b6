"""Recursive rejection sampling: sps, rrs, rrs_wor (docs/verifiers/rejection.md)."""
