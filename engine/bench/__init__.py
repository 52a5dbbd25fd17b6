"""The bench room: engine and verifier benchmarks, draft evaluation, the round-log replay (``resispec replay``)."""
