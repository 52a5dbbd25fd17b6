"""The scenarios of ``resispec bench adaptive`` (`resispec.engine.bench.adaptive_bench`), by name: torch-free, so
that the CLI's parser names them without importing the engine.

- ``load``: a bounded one-core CPU burner started halfway through the run and stopped by the benchmark;
- ``stale``: the defaults from a calibration made as if under load;
- ``repetitive``: a prompt asking to repeat a paragraph, where a prompt-lookup draft can pay;
- ``warm-start``: the time to the first token of a warm ``generate``.
"""

SCENARIOS = ("load", "stale", "repetitive", "warm-start")
