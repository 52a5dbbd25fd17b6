"""The known-biased controls: the published rule's bias (docs/verifiers/controls.md)."""
