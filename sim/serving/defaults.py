"""Defaults of the serving-scale tools, importable without pyarrow (the CLI's parsers read them)."""

ROWS_PER_GROUP = 16384
"""Row-group size of the files this package writes: about 6 MB of columns at M = 64 (one worker
holds one row group and its float64 copies at a time)."""
SYNTH_FAMILY = "llm:sigma=1,V=1024"
SYNTH_KEPT = 64
SYNTH_K = 4
SYNTH_ROWS_PER_FILE = 262144
